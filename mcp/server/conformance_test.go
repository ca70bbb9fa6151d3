package server

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"adaptbot/registry"
	"adaptbot/shipping"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance)
// runs its server scenarios against AdaptBot's /mcp and against the HTTP
// server of an exported module, with testdata/conformance/baseline.yml
// listing the scenarios that need the suite's own reference fixtures.
//
// The test finds the suite at $ADAPTBOT_CONFORMANCE, else at
// ../../.cache/conformance/node_modules/.bin/conformance (what
// `npm install --prefix .cache/conformance @modelcontextprotocol/conformance@0.1.16`
// makes). Without it the test skips, unless ADAPTBOT_REQUIRE_CONFORMANCE=1,
// when it fails.

const conformancePackage = "@modelcontextprotocol/conformance@0.1.16"

func conformanceCommand(t *testing.T) []string {
	t.Helper()
	bin := os.Getenv("ADAPTBOT_CONFORMANCE")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", ".cache", "conformance", "node_modules", ".bin", "conformance"))
	}
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(bin); err != nil || nodeErr != nil {
		msg := "the MCP conformance suite is not installed; run `npm install --prefix .cache/conformance " + conformancePackage + "` at the repository root, or set ADAPTBOT_CONFORMANCE to its conformance command"
		if os.Getenv("ADAPTBOT_REQUIRE_CONFORMANCE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := []string{node}
	if out, err := exec.Command(node, "--version").Output(); err == nil {
		major, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0], "v"))
		if major < 22 {
			shim, _ := filepath.Abs(filepath.Join("testdata", "conformance", "node20.mjs"))
			cmd = append(cmd, "--import", shim)
		}
	}
	return append(cmd, bin)
}

// conform runs the suite's server scenarios against url and fails on any
// failure the baseline does not list (or a listed one that passes).
func conform(t *testing.T, suite []string, url string) {
	t.Helper()
	baseline, _ := filepath.Abs(filepath.Join("testdata", "conformance", "baseline.yml"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append(suite[1:], "server", "--url", url, "--expected-failures", baseline, "-o", t.TempDir())
	cmd := exec.CommandContext(ctx, suite[0], args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance suite against %s: %v\n%s", url, err, out)
	}
	summary := out
	if i := bytes.Index(out, []byte("=== SUMMARY ===")); i >= 0 {
		summary = out[i:]
	}
	if !bytes.Contains(summary, []byte("✓ tools-list")) || !bytes.Contains(summary, []byte("✓ server-initialize")) {
		t.Errorf("the suite did not pass tools-list and server-initialize:\n%s", summary)
	}
	t.Logf("%s", summary)
}

func TestConformanceSuite(t *testing.T) {
	suite := conformanceCommand(t)
	t.Run("adaptbot serve", func(t *testing.T) {
		bin := adaptbotBinary(t)
		a := newAppEnv(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		conform(t, suite, startServer(t, ctx, bin, a)+"/mcp")
	})
	t.Run("exported module", func(t *testing.T) {
		conform(t, suite, exportedServer(t, "calculator", "text_stats", "weather_forecast"))
	})
}

// exportedServer exports the named shipped tools, builds the module and
// serves it over HTTP; it returns its MCP URL.
func exportedServer(t *testing.T, names ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	toolsDir := filepath.Join(dir, "tools")
	for _, name := range names {
		for _, file := range []string{name + ".go", registry.ExamplesFile} {
			b, err := os.ReadFile(filepath.Join("..", "..", "tools", name, file))
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Join(toolsDir, name), 0o755)
			os.WriteFile(filepath.Join(toolsDir, name, file), b, 0o644)
		}
	}
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: toolsDir, Path: filepath.Join(dir, "tools_registry.json")})
	if err != nil {
		t.Fatal(err)
	}
	items, err := shipping.Select(reg, names)
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, "exported")
	if _, err := shipping.Export(items, shipping.ExportOptions{Dir: mod}); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "exported-bin")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	url := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`at (http://\S+/mcp)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
	}()
	select {
	case u := <-url:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("the exported server did not start")
	}
	return ""
}
