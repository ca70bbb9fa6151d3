package shipping

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// goTool returns the go command, or skips: the export's own tests need it.
func goTool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	return p
}

// goIn runs the go command in dir as a user would, from the module cache
// alone: no proxy, no checksum database, no toolchain download.
func goIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestExportedModuleBuildsAndServes is the check: calculator and
// unit_converter exported as a module whose own tests pass, whose binary
// lists both tools to an MCP client over stdio and answers 2+3*4 with 14.
func TestExportedModuleBuildsAndServes(t *testing.T) {
	h := newHome(t, false, "calculator", "unit_converter", "text_stats")
	items, err := Select(h.reg, []string{"calculator", "unit_converter"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "calc-tools")
	files, err := Export(items, ExportOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go.mod", "go.sum", "main.go", "main_test.go", "tools/tools.go", "README.md", "LICENSE",
		"tools/calculator/calculator.go", "tools/calculator/calculator_test.go", "tools/unit_converter/unit_converter_test.go"} {
		if !slices.Contains(files, want) {
			t.Errorf("files = %v, want %s", files, want)
		}
	}
	if slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, "toolkit/") || strings.Contains(f, "text_stats") }) {
		t.Errorf("files = %v: neither tool uses the toolkit, and text_stats was not asked for", files)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "tools", "calculator", "calculator.go"))
	if orig, _ := h.reg.Tool("calculator"); !bytes.Equal(src, orig.Code) {
		t.Error("the exported calculator is not the serving source")
	}

	out := goIn(t, dir, "test", "./...")
	for _, pkg := range []string{"calc-tools\t", "calc-tools/tools/calculator", "calc-tools/tools/unit_converter"} {
		if !strings.Contains(out, "ok  \t"+strings.TrimSuffix(pkg, "\t")) {
			t.Errorf("go test ./... ran no passing tests for %s:\n%s", pkg, out)
		}
	}
	goIn(t, dir, "vet", "./...")
	bin := filepath.Join(t.TempDir(), "calc-tools")
	goIn(t, dir, "build", "-o", bin, ".")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.Title == "" {
			t.Errorf("%s: title %q, annotations %+v", tool.Name, tool.Title, tool.Annotations)
		}
	}
	if !slices.Equal(names, []string{"calculator", "unit_converter"}) {
		t.Errorf("tools/list = %v, want calculator and unit_converter", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "2+3*4"}})
	if err != nil || res.IsError {
		t.Fatalf("calculator: %v %+v", err, res)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; text != "2+3*4 = 14" {
		t.Errorf("calculator(2+3*4) = %q, want 14", text)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "unit_converter", Arguments: json.RawMessage(`{"value": 5, "from": "km", "to": "m"}`)})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "= 5000 meters") {
		t.Errorf("unit_converter: %v %+v", err, res)
	}
}
