package shipping

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/registry"
)

// BundleFormat names the format in a bundle's manifest.
const BundleFormat = "adaptbot-bundle/1"

// ManifestName is the manifest's name in a bundle.
const ManifestName = "manifest.json"

// Limits on what ReadBundle reads, so that a bundle cannot exhaust memory.
const (
	MaxBundleFiles = 4096
	MaxBundleFile  = 1 << 20  // one file, unpacked
	MaxBundleTotal = 32 << 20 // every file, unpacked
)

// Manifest is a bundle's manifest.json: what it holds, and the SHA-256 of
// every other file in it.
type Manifest struct {
	Format    string         `json:"format"`
	CreatedAt time.Time      `json:"created_at"`
	Tools     []ManifestTool `json:"tools"`
	Files     []ManifestFile `json:"files"`
}

// ManifestTool is one tool of a bundle.
type ManifestTool struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
	// SHA256 is the source's, as the exporting registry recorded it.
	SHA256 string   `json:"sha256"`
	Calls  []string `json:"calls,omitempty"`
}

// ManifestFile is one file of a bundle and its SHA-256.
type ManifestFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Bundle is a bundle read and checked by ReadBundle.
type Bundle struct {
	Manifest Manifest
	// Tools are sorted by name.
	Tools []BundleTool
}

// BundleTool is one tool of a bundle.
type BundleTool struct {
	Name   string
	Source []byte
	// Examples is its examples.json, or nil.
	Examples []byte
	// Entry is the tool's registry entry where it was exported: the
	// version history's current entry.
	Entry registry.Entry
}

// The files of a tool in a bundle.
func sourcePath(name string) string   { return "tools/" + name + "/" + name + ".go" }
func examplesPath(name string) string { return "tools/" + name + "/" + registry.ExamplesFile }
func entryPath(name string) string    { return "tools/" + name + "/entry.json" }

// WriteBundle writes items (from Select) to w as a bundle: a gzip'ed tar
// of each tool's source, examples and registry entry, and a manifest of
// their SHA-256 sums. A tool with fewer than two stored examples is refused:
// an import runs them through the gate, which wants two.
func WriteBundle(w io.Writer, items []Item, now time.Time) error {
	if len(items) == 0 {
		return errors.New("no tools to bundle")
	}
	now = now.UTC().Truncate(time.Second)
	files := map[string][]byte{}
	m := Manifest{Format: BundleFormat, CreatedAt: now}
	for _, it := range items {
		name := it.Entry.Name
		if n := countExamples(it.Examples); n < 2 {
			return refuse(NotShippable, name, "", "%s has %d stored examples; an import runs a tool's examples through the gate, which wants at least 2: add them to tools/%s/%s, then bundle it", name, n, name, registry.ExamplesFile)
		}
		entry, err := json.MarshalIndent(it.Entry, "", "  ")
		if err != nil {
			return err
		}
		files[sourcePath(name)] = it.Code
		files[examplesPath(name)] = it.Examples
		files[entryPath(name)] = append(entry, '\n')
		m.Tools = append(m.Tools, ManifestTool{Name: name, Version: it.Entry.Version, SHA256: it.Entry.SHA256, Calls: it.Spec.Calls})
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		m.Files = append(m.Files, ManifestFile{Path: p, SHA256: adaptbot.Digest(files[p]), Size: int64(len(files[p]))})
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	put := func(name string, data []byte) error {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put(ManifestName, append(manifest, '\n')); err != nil {
		return err
	}
	for _, p := range paths {
		if err := put(p, files[p]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func countExamples(raw []byte) int {
	var ex []json.RawMessage
	if json.Unmarshal(raw, &ex) != nil {
		return 0
	}
	return len(ex)
}

// ReadBundle reads a bundle it does not trust. It refuses (a *Refused) a
// stream that is not a gzip'ed tar, a path that is absolute, climbs out
// (..) or is not clean, a link or any file that is not a regular file, a
// file that is not the manifest's layout, a file the manifest does not
// list or lists with another SHA-256, and anything past the size limits.
// It reads, and writes nothing.
func ReadBundle(r io.Reader) (*Bundle, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, refuse(Malformed, "", "", "not a bundle (a gzip'ed tar from `adaptbot tools export --bundle`): %v", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, refuse(Malformed, "", "", "the bundle is not a readable tar: %v", err)
		}
		name := hdr.Name
		if err := safePath(name); err != nil {
			return nil, refuse(UnsafePath, "", name, "bundle file %q: %v; nothing was imported", name, err)
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeSymlink, tar.TypeLink:
			return nil, refuse(UnsafePath, "", name, "bundle file %q is a link (to %q): a bundle holds regular files only; nothing was imported", name, hdr.Linkname)
		default:
			return nil, refuse(UnsafePath, "", name, "bundle file %q is not a regular file (tar type %q); nothing was imported", name, hdr.Typeflag)
		}
		if _, dup := files[name]; dup {
			return nil, refuse(Malformed, "", name, "bundle file %q appears twice", name)
		}
		if len(files) >= MaxBundleFiles {
			return nil, refuse(Malformed, "", name, "the bundle holds more than %d files", MaxBundleFiles)
		}
		if hdr.Size > MaxBundleFile || total+hdr.Size > MaxBundleTotal {
			return nil, refuse(Malformed, "", name, "bundle file %q is %d bytes: a file may have %d, the whole bundle %d", name, hdr.Size, MaxBundleFile, MaxBundleTotal)
		}
		data, err := io.ReadAll(io.LimitReader(tr, MaxBundleFile+1))
		if err != nil {
			return nil, refuse(Malformed, "", name, "bundle file %q: %v", name, err)
		}
		if int64(len(data)) > MaxBundleFile {
			return nil, refuse(Malformed, "", name, "bundle file %q is over %d bytes", name, MaxBundleFile)
		}
		total += int64(len(data))
		files[name] = data
	}
	return checkBundle(files)
}

// safePath accepts a relative, clean, slash-separated path inside the
// bundle.
func safePath(name string) error {
	switch {
	case name == "":
		return errors.New("an empty path")
	case strings.HasPrefix(name, "/") || (len(name) > 1 && name[1] == ':'):
		return errors.New("an absolute path")
	case strings.Contains(name, `\`):
		return errors.New("a backslash in the path")
	}
	for _, elem := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if elem == ".." {
			return errors.New("a path that climbs out of the bundle (..)")
		}
	}
	if path.Clean(strings.TrimSuffix(name, "/")) != strings.TrimSuffix(name, "/") {
		return errors.New("a path that is not clean (. or //)")
	}
	return nil
}

// checkBundle checks the files of a bundle against its manifest and its
// layout.
func checkBundle(files map[string][]byte) (*Bundle, error) {
	raw, ok := files[ManifestName]
	if !ok {
		return nil, refuse(Malformed, "", "", "the bundle has no %s", ManifestName)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, refuse(Malformed, "", ManifestName, "the bundle's %s is not a manifest: %v", ManifestName, err)
	}
	if m.Format != BundleFormat {
		return nil, refuse(Malformed, "", ManifestName, "the bundle's format is %q; this AdaptBot reads %q", m.Format, BundleFormat)
	}
	listed := map[string]bool{ManifestName: true}
	for _, f := range m.Files {
		data, ok := files[f.Path]
		if !ok {
			return nil, refuse(Malformed, "", f.Path, "the manifest lists %s, which is not in the bundle", f.Path)
		}
		if got := adaptbot.Digest(data); got != f.SHA256 {
			return nil, refuse(Tampered, "", f.Path, "%s does not match the manifest: its SHA-256 is %s, the manifest says %s; the bundle was changed after it was made, so nothing was imported", f.Path, got, f.SHA256)
		}
		if int64(len(data)) != f.Size {
			return nil, refuse(Tampered, "", f.Path, "%s does not match the manifest: its size is %d bytes, the manifest says %d; the manifest was changed after the bundle was made, so nothing was imported", f.Path, len(data), f.Size)
		}
		listed[f.Path] = true
	}
	for p := range files {
		if !listed[p] {
			return nil, refuse(Tampered, "", p, "%s is in the bundle but not in its manifest, so its sum cannot be checked; nothing was imported", p)
		}
	}
	b := &Bundle{Manifest: m}
	layout := map[string]bool{ManifestName: true}
	seen := map[string]bool{}
	for _, mt := range m.Tools {
		if err := contract.ValidName(mt.Name); err != nil {
			return nil, refuse(Malformed, mt.Name, "", "the manifest names a tool %q: %v", mt.Name, err)
		}
		if seen[mt.Name] {
			return nil, refuse(Malformed, mt.Name, "", "the manifest lists %s twice", mt.Name)
		}
		seen[mt.Name] = true
		t := BundleTool{Name: mt.Name, Source: files[sourcePath(mt.Name)], Examples: files[examplesPath(mt.Name)]}
		if t.Source == nil {
			return nil, refuse(Malformed, mt.Name, sourcePath(mt.Name), "the bundle has no source for %s (%s)", mt.Name, sourcePath(mt.Name))
		}
		entry, ok := files[entryPath(mt.Name)]
		if !ok {
			return nil, refuse(Malformed, mt.Name, entryPath(mt.Name), "the bundle has no entry for %s (%s)", mt.Name, entryPath(mt.Name))
		}
		if err := json.Unmarshal(entry, &t.Entry); err != nil || t.Entry.Name != mt.Name {
			return nil, refuse(Malformed, mt.Name, entryPath(mt.Name), "%s is not %s's registry entry", entryPath(mt.Name), mt.Name)
		}
		for _, p := range []string{sourcePath(mt.Name), examplesPath(mt.Name), entryPath(mt.Name)} {
			layout[p] = true
		}
		b.Tools = append(b.Tools, t)
	}
	for p := range files {
		if !layout[p] {
			return nil, refuse(Malformed, "", p, "%s is not a file a bundle holds (tools/NAME/NAME.go, examples.json and entry.json of the tools its manifest lists)", p)
		}
	}
	if len(b.Tools) == 0 {
		return nil, refuse(Malformed, "", ManifestName, "the bundle holds no tools")
	}
	sort.Slice(b.Tools, func(i, j int) bool { return b.Tools[i].Name < b.Tools[j].Name })
	return b, nil
}

// Names lists the bundle's tools.
func (b *Bundle) Names() []string {
	out := make([]string, len(b.Tools))
	for i, t := range b.Tools {
		out[i] = t.Name
	}
	return out
}
