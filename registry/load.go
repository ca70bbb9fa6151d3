package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"adaptbot"
	"adaptbot/contract"
)

// firstStart reports whether no owner has saved a registry here yet: no
// registry file and no last good copy.
func (r *Registry) firstStart() bool {
	return !exists(r.opts.Path) && !exists(r.opts.Path+".bak")
}

// readFile loads the registry file, falling back as Open describes. The
// caller holds r.write.
func (r *Registry) readFile() ([]Entry, error) {
	data, err := os.ReadFile(r.opts.Path)
	if errors.Is(err, os.ErrNotExist) {
		if entries, ok := r.readBak(); ok {
			r.warn("registry %s is missing; restored the last good copy from %s.bak and reconciled it with %s", r.opts.Path, r.opts.Path, r.opts.ToolsDir)
			return r.fromHistory(entries), nil
		}
		r.warn("registry %s is missing and has no good .bak; rebuilding it from %s and its history", r.opts.Path, r.opts.ToolsDir)
		return r.fromHistory(nil), nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	entries, perr := parseFile(data)
	if perr == nil {
		r.seen = adaptbot.Digest(data)
		return entries, nil
	}
	if r.opts.ReadOnly {
		r.warn("registry %s is corrupt (%v); the server that owns it will move it aside", r.opts.Path, perr)
	} else {
		aside := r.opts.Path + ".corrupt-" + r.opts.Now().UTC().Format("20060102T150405")
		if err := os.Rename(r.opts.Path, aside); err != nil {
			return nil, fmt.Errorf("registry %s is corrupt (%v) and could not be moved aside: %w", r.opts.Path, perr, err)
		}
		r.warn("registry %s is corrupt (%v); moved it to %s", r.opts.Path, perr, aside)
	}
	if data, err := os.ReadFile(r.opts.Path + ".bak"); err == nil {
		if entries, err := parseFile(data); err == nil {
			r.warn("restored the last good copy from %s.bak", r.opts.Path)
			return r.fromHistory(entries), nil
		}
	}
	r.warn("no good copy of the registry; rebuilding it from %s", r.opts.ToolsDir)
	return r.fromHistory(nil), nil
}

// readBak reads the last good copy of the registry file, if there is one.
func (r *Registry) readBak() ([]Entry, bool) {
	data, err := os.ReadFile(r.opts.Path + ".bak")
	if err != nil {
		return nil, false
	}
	entries, err := parseFile(data)
	if err != nil {
		r.warn("%s.bak is not a good copy either (%v); not used", r.opts.Path, err)
		return nil, false
	}
	return entries, true
}

// fromHistory reconciles entries recovered from a copy (or none) with the
// tools folder before the usual sync: the .bak is one save behind, so a tool
// changed by that last save, or added since, would otherwise come back as a
// new manual version. For each tool whose source on disk is the newest
// version kept in history, that version's recorded entry is used instead,
// with its origin, created_at and version number. Everything else is left
// to the sync: entries whose file is gone are dropped, and tools found only
// in the folder are added as manual.
//
// A version that was held for review (the copy records it as pending, or
// its entry.json in history says Pending; see snapshot) stays pending: the
// version the copy names keeps serving, and a new tool serves nothing until
// approved. An approval made by the very save that was lost is therefore
// asked again.
func (r *Registry) fromHistory(entries []Entry) []Entry {
	byName := make(map[string]int, len(entries))
	for i, e := range entries {
		byName[e.Name] = i
	}
	dirs, _ := os.ReadDir(r.opts.ToolsDir) // Open's scan reports bad folders
	for _, d := range dirs {
		name := d.Name()
		if !d.IsDir() || contract.ValidName(name) != nil {
			continue
		}
		src, err := os.ReadFile(r.SourcePath(name))
		if err != nil {
			continue
		}
		sum := adaptbot.Digest(src)
		if i, ok := byName[name]; ok && entries[i].SHA256 == sum {
			continue // the copy already describes the file on disk
		}
		v := r.latestVersion(name)
		if v == 0 {
			continue
		}
		kept, err := os.ReadFile(r.versionPath(name, v))
		if err != nil || adaptbot.Digest(kept) != sum {
			continue
		}
		var e Entry
		meta, err := os.ReadFile(filepath.Join(filepath.Dir(r.versionPath(name, v)), "entry.json"))
		if err != nil || json.Unmarshal(meta, &e) != nil || e.Name != name || e.SHA256 != sum || e.Version != v {
			continue
		}
		i, listed := byName[name]
		if listed && entries[i].PendingVersion == v && entries[i].PendingSHA256 == sum {
			continue // the copy already holds it for review
		}
		if e.Status == Pending {
			// Held for review: not approved by anything we know of.
			var held Entry
			if listed {
				held = entries[i]
			} else {
				held = e
				held.Version, held.SHA256 = 0, "" // a new tool: nothing serves
			}
			held.Status, held.LastError = Pending, ""
			held.PendingVersion, held.PendingSHA256 = v, sum
			e = held
		} else {
			e.Status, e.LastError = OK, ""
			e.PendingVersion, e.PendingSHA256 = 0, ""
		}
		if listed {
			entries[i] = e
		} else {
			byName[name] = len(entries)
			entries = append(entries, e)
		}
	}
	return entries
}

func parseFile(data []byte) ([]Entry, error) {
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, e := range f.Tools {
		if err := contract.ValidName(e.Name); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("tools[%d]: %s is listed twice", i, e.Name)
		}
		seen[e.Name] = true
	}
	return f.Tools, nil
}

// scan lists the tool folders.
func (r *Registry) scan() ([]string, error) {
	dirs, err := os.ReadDir(r.opts.ToolsDir)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var names []string
	for _, d := range dirs {
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
			continue
		}
		if err := contract.ValidName(d.Name()); err != nil {
			r.warn("skipping folder %s: %v", filepath.Join(r.opts.ToolsDir, d.Name()), err)
			continue
		}
		names = append(names, d.Name())
	}
	return names, nil
}

// restoreLocked loads the entry's recorded version from history, so a tool
// whose file broke while the server was down still serves its last good code.
func (r *Registry) restoreLocked(rec *record) {
	if rec.entry.Version == 0 {
		return
	}
	src, err := os.ReadFile(r.versionPath(rec.entry.Name, rec.entry.Version))
	if err == nil && adaptbot.Digest(src) == rec.entry.SHA256 {
		rec.code = src
	}
}

// ReadEntries reads a registry file without opening a Registry: no checks,
// no writes. It is for read-only commands.
func ReadEntries(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	entries, err := parseFile(data)
	if err != nil {
		return nil, fmt.Errorf("registry %s is corrupt: %w", path, err)
	}
	return entries, nil
}
