package shipping

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
	"adaptbot/registry"
)

// Tools written for these tests. quad calls double through the toolkit.
// They are put in a registry that checks only the contract, with no
// sandbox: Select and Export read sources and run none of them.
const (
	doubleSource = `// Package double doubles a number.
package double

import "context"

// Input is the number.
type Input struct {
	N int ` + "`json:\"n\" jsonschema:\"the number\"`" + `
}

// Output is the doubled number.
type Output struct {
	N int ` + "`json:\"n\"`" + `
}

// Execute doubles in.N.
func Execute(ctx context.Context, in Input) (Output, error) { return Output{N: 2 * in.N}, nil }
`
	quadSource = `// Package quad multiplies a number by four, doubling it twice with the double tool.
package quad

import (
	"context"
	"fmt"

	"adaptbot/toolkit"
)

// Input is the number.
type Input struct {
	N int ` + "`json:\"n\" jsonschema:\"the number\"`" + `
}

// Execute doubles in.N twice.
func Execute(ctx context.Context, in Input) (string, error) {
	var once struct{ N int }
	if err := toolkit.CallJSON(ctx, "double", map[string]int{"n": in.N}, &once); err != nil {
		return "", err
	}
	twice, err := toolkit.Call(ctx, "double", map[string]int{"n": once.N})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("4 × %d: %s", in.N, twice), nil
}
`
	fetchSource = `// Package fetch_page returns the body of a web page.
package fetch_page

import (
	"context"

	"adaptbot/toolkit"
)

// Input is the page's address.
type Input struct {
	URL string ` + "`json:\"url\" jsonschema:\"the page's URL\"`" + `
}

// Execute fetches in.URL.
func Execute(ctx context.Context, in Input) (string, error) { return toolkit.Get(ctx, in.URL) }
`
)

// contractHome is a registry that checks only the contract (no sandbox).
func contractHome(t *testing.T, review bool) *home {
	t.Helper()
	dir := t.TempDir()
	h := &home{dir: dir, tools: filepath.Join(dir, "tools")}
	var err error
	h.reg, err = registry.Open(context.Background(), registry.Options{ToolsDir: h.tools, Path: filepath.Join(dir, "tools_registry.json"), Review: review})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *home) put(t *testing.T, name, src, examples string) {
	t.Helper()
	o := registry.PutOptions{Origin: adaptbot.OriginGenerated}
	if examples != "" {
		o.Examples = []byte(examples)
	}
	if _, err := h.reg.Put(context.Background(), name, []byte(src), o); err != nil {
		t.Fatal(err)
	}
}

// TestExportBringsCalleesAlong exports quad alone: double, which it calls,
// comes along, and in the module quad's calls reach double in-process.
func TestExportBringsCalleesAlong(t *testing.T) {
	h := contractHome(t, false)
	h.put(t, "double", doubleSource, `[{"input": {"n": 2}, "contains": "\"n\":4"}]`)
	h.put(t, "quad", quadSource, `[{"input": {"n": 3}, "contains": "4 × 3: {\"n\":12}"}]`)
	items, err := Select(h.reg, []string{"quad"})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Entry.Name != "double" || items[0].Asked || !items[1].Asked {
		t.Fatalf("items = %+v, want double (as a callee) and quad", items)
	}
	dir := filepath.Join(t.TempDir(), "quad")
	files, err := Export(items, ExportOptions{Dir: dir, Module: "example.com/quad"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "toolkit/call.go") || slices.Contains(files, "toolkit/toolkit.go") {
		t.Errorf("files = %v: want the toolkit's calls and not its HTTP code", files)
	}
	out := goIn(t, dir, "test", "./...")
	if !strings.Contains(out, "ok  \texample.com/quad/tools/quad") {
		t.Errorf("quad's examples did not pass:\n%s", out)
	}
}

// TestExportKeepsTheEgressPolicy builds a server of a tool that fetches any
// URL: a loopback address is refused, as in the sandbox, unless
// --egress-allow names it.
func TestExportKeepsTheEgressPolicy(t *testing.T) {
	h := contractHome(t, false)
	h.put(t, "fetch_page", fetchSource, "")
	items, err := Select(h.reg, []string{"fetch_page"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fetch")
	files, err := Export(items, ExportOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "toolkit/policy.go") || slices.Contains(files, "toolkit/call.go") {
		t.Errorf("files = %v: want the toolkit's HTTP code and egress policy, not its calls", files)
	}
	bin := filepath.Join(t.TempDir(), "fetch")
	goIn(t, dir, "build", "-o", bin, ".")
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from loopback") }))
	defer page.Close()

	call := func(args ...string) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fetch_page", Arguments: map[string]any{"url": page.URL}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*sdk.TextContent).Text, res.IsError
	}
	if text, isErr := call(); !isErr || !strings.Contains(text, "blocked by the egress policy") {
		t.Errorf("fetching %s: %q (isError %v), want the egress policy's refusal", page.URL, text, isErr)
	}
	if text, isErr := call("--egress-allow", "127.0.0.1"); isErr || text != "hello from loopback" {
		t.Errorf("fetching %s with --egress-allow: %q (isError %v)", page.URL, text, isErr)
	}
}

// TestExportRefuses checks what an export will not ship, and that it then
// writes nothing.
func TestExportRefuses(t *testing.T) {
	h := contractHome(t, false)
	h.put(t, "double", doubleSource, "")
	h.put(t, "quad", quadSource, "")
	h.put(t, "templ", `// Package templ fills a template.
package templ

import (
	"context"
	"strings"
	"text/template"
)

// Input is the template.
type Input struct {
	Text string `+"`json:\"text\" jsonschema:\"the template\"`"+`
}

// Execute fills it.
func Execute(ctx context.Context, in Input) (string, error) {
	var b strings.Builder
	err := template.Must(template.New("t").Parse(in.Text)).Execute(&b, nil)
	return b.String(), err
}
`, "")
	h.put(t, "directive", strings.Replace(doubleSource, "package double", "package directive\n\n//go:generate rm -rf /", 1), "")
	h.put(t, "acting", strings.Replace(strings.Replace(doubleSource, "package double", "package acting", 1), "// Input", "const Hosts = \"hooks.example.org\"\n\n// Input", 1), "")
	// double breaks by hand: its last good version still serves.
	writeFile(t, filepath.Join(h.tools, "double", "double.go"), []byte("package double\n"))
	h.reg.Sync(context.Background(), "double")

	reviewed := contractHome(t, true)
	reviewed.put(t, "fetch_page", fetchSource, "")

	tests := []struct {
		src   Source
		names []string
		want  string
	}{
		{h.reg, []string{"nothing"}, `no tool named "nothing"`},
		{h.reg, []string{"double"}, "double is broken: its file fails its checks"},
		{h.reg, []string{"quad"}, "double (which quad calls) is broken"},
		{reviewed.reg, []string{"fetch_page"}, "fetch_page is pending review: version 1 waits for approval"},
	}
	for _, tt := range tests {
		_, err := Select(tt.src, tt.names)
		var r *Refused
		if !errors.As(err, &r) || r.Reason != NotShippable || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Select(%v) = %v, want a refusal saying %q", tt.names, err, tt.want)
		}
	}

	for name, want := range map[string]string{
		"templ":     "templ imports text/template",
		"directive": "directive.go:4 has a compiler directive (//go:generate rm -rf /)",
		"acting":    "acting declares the hosts it acts on (const Hosts)",
	} {
		items, err := Select(h.reg, []string{name})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), name)
		_, err = Export(items, ExportOptions{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("export %s: %v, want %q", name, err, want)
		}
		if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("export %s was refused but made %s", name, dir)
		}
	}

	full := t.TempDir()
	writeFile(t, filepath.Join(full, "mine.txt"), []byte("keep"))
	items, _ := Select(h.reg, []string{"templ"})
	items[0].Spec.Imports = nil // past the template check, to reach the folder's
	if _, err := Export(items, ExportOptions{Dir: full}); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("export into a folder with files: %v", err)
	}
}
