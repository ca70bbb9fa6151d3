package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"adaptbot"
	"adaptbot/atomicfile"
	"adaptbot/contract"
)

// versionPath is where version v of a tool is kept.
func (r *Registry) versionPath(name string, v int) string {
	return filepath.Join(r.opts.HistoryDir, name, "v"+strconv.Itoa(v), name+".go")
}

// snapshot keeps version e.Version of the tool (and its examples, if any) in
// history, once. Its entry.json records the version's own entry, with
// Status Pending if held (waiting for review), else OK; Approve rewrites it
// as OK, so a registry restored from history knows what was approved.
func (r *Registry) snapshot(e Entry, src []byte, held bool) error {
	if e.Version == 0 || r.opts.ReadOnly {
		return nil
	}
	p := r.versionPath(e.Name, e.Version)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := atomicfile.Write(p, src, 0o644); err != nil {
		return fmt.Errorf("registry: history: %w", err)
	}
	if err := r.writeVersionEntry(e, held); err != nil {
		return fmt.Errorf("registry: history: %w", err)
	}
	if ex, err := os.ReadFile(filepath.Join(r.Dir(e.Name), ExamplesFile)); err == nil {
		if err := atomicfile.Write(filepath.Join(filepath.Dir(p), ExamplesFile), ex, 0o644); err != nil {
			return fmt.Errorf("registry: history: %w", err)
		}
	}
	r.prune(e.Name, e.Version)
	return nil
}

// writeVersionEntry writes entry.json beside version e.Version in history:
// e describes that version, Status Pending if held, else OK.
func (r *Registry) writeVersionEntry(e Entry, held bool) error {
	e.Status, e.LastError = OK, ""
	if held {
		e.Status = Pending
	}
	e.PendingVersion, e.PendingSHA256 = 0, ""
	meta, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(filepath.Dir(r.versionPath(e.Name, e.Version)), "entry.json"), meta, 0o644)
}

// prune removes the oldest versions of name from history, keeping the
// newest Options.HistoryKeep and always keep (the version just saved), the
// version that serves and the version waiting for approval, whatever their
// age. A version that cannot be removed is reported and left for the next
// prune. The caller holds r.write.
func (r *Registry) prune(name string, keep int) {
	protect := map[int]bool{keep: true}
	r.mu.RLock()
	if rec := r.tools[name]; rec != nil {
		protect[rec.entry.Version] = true
		protect[rec.entry.PendingVersion] = true
	}
	r.mu.RUnlock()
	dirs, _ := os.ReadDir(filepath.Join(r.opts.HistoryDir, name))
	var versions []int
	for _, d := range dirs {
		v, err := strconv.Atoi(strings.TrimPrefix(d.Name(), "v"))
		if d.IsDir() && strings.HasPrefix(d.Name(), "v") && err == nil {
			versions = append(versions, v)
		}
	}
	if len(versions) <= r.opts.HistoryKeep {
		return
	}
	slices.Sort(versions)
	for _, v := range versions[:len(versions)-r.opts.HistoryKeep] {
		if protect[v] {
			continue
		}
		if err := os.RemoveAll(filepath.Dir(r.versionPath(name, v))); err != nil {
			r.opts.Log.Warn("registry: prune history", "tool", name, "version", v, "err", err)
		}
	}
}

// latestVersion is the highest version of name kept in history, or 0.
func (r *Registry) latestVersion(name string) int {
	dirs, _ := os.ReadDir(filepath.Join(r.opts.HistoryDir, name))
	latest := 0
	for _, d := range dirs {
		if v, err := strconv.Atoi(strings.TrimPrefix(d.Name(), "v")); err == nil && strings.HasPrefix(d.Name(), "v") {
			latest = max(latest, v)
		}
	}
	return latest
}

// Version is one kept version of a tool.
type Version = adaptbot.Version

// Versions lists the kept versions of name, oldest first. It works for a
// deleted tool too.
func (r *Registry) Versions(name string) ([]Version, error) {
	if err := contract.ValidName(name); err != nil {
		return nil, err
	}
	dirs, err := os.ReadDir(filepath.Join(r.opts.HistoryDir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, NotFound(name)
	}
	if err != nil {
		return nil, err
	}
	cur, serving := r.Tool(name)
	e, _ := r.Entry(name)
	var out []Version
	for _, d := range dirs {
		v, err := strconv.Atoi(strings.TrimPrefix(d.Name(), "v"))
		if !d.IsDir() || !strings.HasPrefix(d.Name(), "v") || err != nil {
			continue
		}
		p := r.versionPath(name, v)
		src, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		info, _ := os.Stat(p)
		sum := adaptbot.Digest(src)
		note, _ := os.ReadFile(filepath.Join(filepath.Dir(p), NoteFile))
		out = append(out, Version{Version: v, SHA256: sum, SavedAt: info.ModTime().UTC(), Current: serving && cur.Version == v,
			Pending: e.PendingVersion == v && e.PendingSHA256 == sum, Note: string(note)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}
