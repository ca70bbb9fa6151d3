package shipping

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/generator"
	"adaptbot/registry"
	"adaptbot/toolbox"
)

// bundleOf bundles the named tools of h.
func bundleOf(t *testing.T, h *home, names ...string) []byte {
	t.Helper()
	items, err := Select(h.reg, names)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteBundle(&b, items, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gateOf is the real gate over h's registry and sandbox.
func gateOf(t *testing.T, h *home) *generator.Generator {
	t.Helper()
	g, err := generator.New(generator.Options{Registry: h.reg, Runner: h.runner, ExampleTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// snapshot lists every file under dir with its content, to show that a
// refused import wrote nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

func importInto(t *testing.T, h *home, bundle []byte, opts ImportOptions) ([]Imported, error) {
	t.Helper()
	b, err := ReadBundle(bytes.NewReader(bundle))
	if err != nil {
		return nil, err
	}
	return Import(context.Background(), b, h.reg, gateOf(t, h), opts)
}

// TestBundleMovesToolsBetweenHomes is the check: a bundle made on
// one AdaptBot is imported into another (another folder) and serves there.
func TestBundleMovesToolsBetweenHomes(t *testing.T) {
	a := newHome(t, false, "calculator", "unit_converter", "text_stats")
	bundle := bundleOf(t, a, "calculator", "text_stats")

	b := newHome(t, false)
	got, err := importInto(t, b, bundle, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Imported{{Name: "calculator", Version: 1, Status: registry.OK}, {Name: "text_stats", Version: 1, Status: registry.OK}}
	if !slices.Equal(got, want) {
		t.Errorf("imported %+v, want %+v", got, want)
	}
	for _, name := range []string{"calculator", "text_stats"} {
		e, ok := b.reg.Entry(name)
		orig, _ := a.reg.Entry(name)
		if !ok || e.Origin != adaptbot.OriginImported || e.SHA256 != orig.SHA256 || e.Category != orig.Category || string(b.reg.Examples(name)) != string(a.reg.Examples(name)) {
			t.Errorf("%s here: %+v; want origin imported, the same source, category and examples", name, e)
		}
	}
	tool, ok := toolbox.New(b.reg, b.runner).Tool("calculator")
	if !ok {
		t.Fatal("the imported calculator does not serve")
	}
	if out, err := tool.Call(context.Background(), json.RawMessage(`{"expression": "2+3*4"}`)); err != nil || out != "2+3*4 = 14" {
		t.Errorf("calculator = %q, %v", out, err)
	}

	// Again: the names are taken.
	before := snapshot(t, b.dir)
	_, err = importInto(t, b, bundle, ImportOptions{})
	var r *Refused
	if !errors.As(err, &r) || r.Reason != Collision || !strings.Contains(err.Error(), "a tool named calculator exists here already: import with --replace") {
		t.Errorf("second import: %v, want a collision", err)
	}
	if after := snapshot(t, b.dir); !maps.Equal(before, after) {
		t.Error("a refused import changed files")
	}
	// With --replace, each becomes the next version.
	got, err = importInto(t, b, bundle, ImportOptions{Replace: true})
	if err != nil || len(got) != 2 || !got[0].Replaced || got[0].Version != 2 {
		t.Errorf("import --replace: %+v, %v; want version 2 of each", got, err)
	}
	// With --rename, beside the existing one.
	got, err = importInto(t, b, bundle, ImportOptions{Rename: map[string]string{"calculator": "calc", "text_stats": "words"}})
	if err != nil || len(got) != 2 || got[0].Name != "calc" || got[0].From != "calculator" {
		t.Fatalf("import --rename: %+v, %v", got, err)
	}
	calc, _ := b.reg.Tool("calc")
	if !strings.Contains(string(calc.Code), "\npackage calc\n") || !strings.HasPrefix(calc.Description, "Evaluates") {
		t.Errorf("renamed calculator: description %q, source starts %.120q", calc.Description, calc.Code)
	}
}

func TestImportUnderReviewIsPending(t *testing.T) {
	a := newHome(t, false, "calculator")
	b := newHome(t, true)
	got, err := importInto(t, b, bundleOf(t, a, "calculator"), ImportOptions{})
	if err != nil || len(got) != 1 || got[0].Status != registry.Pending || got[0].Version != 1 {
		t.Fatalf("import with review on: %+v, %v; want calculator pending as version 1", got, err)
	}
	if _, serving := b.reg.Tool("calculator"); serving {
		t.Error("a pending import serves before approval")
	}
	if _, err := b.reg.Approve(context.Background(), "calculator"); err != nil {
		t.Fatal(err)
	}
	if _, serving := b.reg.Tool("calculator"); !serving {
		t.Error("approved import does not serve")
	}
}

// file is one entry of a hand-made tar.
type file struct {
	hdr  tar.Header
	data string
}

func reg(name, data string) file {
	return file{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}, data}
}

func tarGz(t *testing.T, files ...file) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := f.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.data))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

// unpack reads a bundle's files as they are, for tests that tamper.
func unpack(t *testing.T, bundle []byte) []file {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []file
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		var data bytes.Buffer
		data.ReadFrom(tr)
		out = append(out, file{*h, data.String()})
	}
	return out
}

// resum makes a bundle's manifest match its files again, as a hostile
// author would.
func resum(t *testing.T, files []file) []file {
	t.Helper()
	var m Manifest
	if err := json.Unmarshal([]byte(files[0].data), &m); err != nil {
		t.Fatal(err)
	}
	for i := range m.Files {
		for _, f := range files {
			if f.hdr.Name == m.Files[i].Path {
				m.Files[i].SHA256, m.Files[i].Size = adaptbot.Digest([]byte(f.data)), int64(len(f.data))
			}
		}
	}
	raw, _ := json.Marshal(m)
	files[0] = reg(ManifestName, string(raw))
	return files
}

// wrongSize makes the manifest give name a size one byte larger than it is,
// its SHA-256 unchanged.
func wrongSize(t *testing.T, files []file, name string) []file {
	t.Helper()
	var m Manifest
	if err := json.Unmarshal([]byte(files[0].data), &m); err != nil {
		t.Fatal(err)
	}
	for i := range m.Files {
		if m.Files[i].Path == name {
			m.Files[i].Size++
		}
	}
	raw, _ := json.Marshal(m)
	out := slices.Clone(files)
	out[0] = reg(ManifestName, string(raw))
	return out
}

func replace(files []file, name, data string) []file {
	out := slices.Clone(files)
	for i := range out {
		if out[i].hdr.Name == name {
			out[i] = reg(name, data)
		}
	}
	return out
}

// TestImportRefusesHostileBundles checks every refusal the issue names,
// and that each writes nothing.
func TestImportRefusesHostileBundles(t *testing.T) {
	a := newHome(t, false, "calculator", "text_stats")
	good := unpack(t, bundleOf(t, a, "calculator"))
	calc := sourcePath("calculator")
	src, _ := a.reg.Tool("calculator")
	osImport := strings.Replace(string(src.Code), "import (\n", "import (\n\t\"os\"\n", 1)
	failingExample := `[{"input": {"expression": "1+1"}, "contains": "= 3"}, {"input": {"expression": "2"}, "contains": "= 2"}]`

	tests := []struct {
		name   string
		bundle []byte
		reason Reason
		want   string
	}{
		{"not a bundle", []byte("PK\x03\x04 a zip"), Malformed, "not a bundle"},
		{"tampered source", tarGz(t, replace(good, calc, string(src.Code)+"\n// changed\n")...), Tampered, "tools/calculator/calculator.go does not match the manifest"},
		{"a size the manifest disagrees with", tarGz(t, wrongSize(t, good, calc)...), Tampered, "its size is"},
		{"a file the manifest does not list", tarGz(t, append(slices.Clone(good), reg("tools/calculator/extra.go", "package calculator"))...), Tampered, "tools/calculator/extra.go is in the bundle but not in its manifest"},
		{"climbs out", tarGz(t, append(slices.Clone(good), reg("../../evil.go", "x"))...), UnsafePath, "climbs out"},
		{"climbs out inside", tarGz(t, append(slices.Clone(good), reg("tools/../../evil.go", "x"))...), UnsafePath, "climbs out"},
		{"absolute", tarGz(t, append(slices.Clone(good), reg("/tmp/evil.go", "x"))...), UnsafePath, "absolute path"},
		{"symlink", tarGz(t, append([]file{{tar.Header{Name: "tools/calculator/examples.json", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, ""}}, good...)...), UnsafePath, "is a link"},
		{"hard link", tarGz(t, append([]file{{tar.Header{Name: "tools/x/x.go", Typeflag: tar.TypeLink, Linkname: "../../../etc/passwd"}, ""}}, good...)...), UnsafePath, "is a link"},
		{"device", tarGz(t, append([]file{{tar.Header{Name: "tools/x/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}, ""}}, good...)...), UnsafePath, "not a regular file"},
		{"forbidden import", tarGz(t, resum(t, replace(good, calc, osImport))...), Contract, `import "os" is not allowed`},
		{"failing example", tarGz(t, resum(t, replace(good, examplesPath("calculator"), failingExample))...), Gate, "calculator fails the gate"},
		{"unknown rename", bundleOf(t, a, "calculator"), Malformed, "--rename nope=x: the bundle has no tool nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newHome(t, false, "text_stats")
			before := snapshot(t, b.dir)
			opts := ImportOptions{}
			if tt.name == "unknown rename" {
				opts.Rename = map[string]string{"nope": "x"}
			}
			_, err := importInto(t, b, tt.bundle, opts)
			var r *Refused
			if !errors.As(err, &r) || r.Reason != tt.reason || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("import: %v, want a %s refusal saying %q", err, tt.reason, tt.want)
			}
			if after := snapshot(t, b.dir); !maps.Equal(before, after) {
				t.Errorf("a refused import changed files: %d before, %d after", len(before), len(after))
			}
			if names := b.reg.List(); len(names) != 1 {
				t.Errorf("registry after a refused import: %+v", names)
			}
		})
	}
}

// TestImportNeedsCallees imports a tool that calls a tool neither in the
// bundle nor on the server.
func TestImportNeedsCallees(t *testing.T) {
	a := contractHome(t, false)
	a.put(t, "double", doubleSource, `[{"input": {"n": 1}, "contains": "2"}, {"input": {"n": 2}, "contains": "4"}]`)
	a.put(t, "quad", quadSource, `[{"input": {"n": 1}, "contains": "4"}, {"input": {"n": 2}, "contains": "8"}]`)
	items, err := Select(a.reg, []string{"quad"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBundle(&buf, items[1:], time.Now()); err != nil { // quad without double
		t.Fatal(err)
	}
	b := newHome(t, false)
	_, err = importInto(t, b, buf.Bytes(), ImportOptions{})
	var r *Refused
	if !errors.As(err, &r) || r.Reason != Dependency || !strings.Contains(err.Error(), "quad calls double, which is neither in the bundle nor serving here") {
		t.Errorf("import: %v, want a dependency refusal", err)
	}
}

func TestRenameFollowsCalls(t *testing.T) {
	got, err := renameInSource("quad", "times_four", []byte(strings.Replace(quadSource, `toolkit.Call(ctx, "double"`, "toolkit.Call(ctx, twice", 1)+"\nconst twice = \"double\"\n"), map[string]string{"double": "dbl", "quad": "times_four"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{"// Package times_four multiplies", "\npackage times_four\n", `toolkit.CallJSON(ctx, "dbl"`, `const twice = "dbl"`} {
		if !strings.Contains(s, want) {
			t.Errorf("renamed source lacks %q:\n%s", want, s)
		}
	}
}

func TestBundleRefusesToolsWithoutExamples(t *testing.T) {
	h := contractHome(t, false)
	h.put(t, "double", doubleSource, "")
	items, _ := Select(h.reg, []string{"double"})
	err := WriteBundle(&bytes.Buffer{}, items, time.Now())
	if err == nil || !strings.Contains(err.Error(), "double has 0 stored examples") {
		t.Errorf("WriteBundle: %v", err)
	}
}
