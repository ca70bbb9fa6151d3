package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/config"
	"adaptbot/identity"
	"adaptbot/registry"
	"adaptbot/service"
	"adaptbot/shipping"
	"adaptbot/web"
)

// toolsHome is an AdaptBot folder holding copies of the named shipped
// tools, with their examples.
func toolsHome(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		for _, file := range []string{name + ".go", "examples.json"} {
			b, err := os.ReadFile(filepath.Join("..", "tools", name, file))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "tools", name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tools", name, file), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// shipServer serves dir as AdaptBot does, with POST /api/tools/import
// mounted (until routes.go lists it), on loopback; it returns the server's
// host:port.
// shipServer starts a server on dir; it returns the server's registry, to
// look behind the API, and its address.
func shipServer(t *testing.T, dir string, env map[string]string) (*registry.Registry, string) {
	t.Helper()
	full := map[string]string{
		"ADAPTBOT_TOOLS_DIR": filepath.Join(dir, "tools"),
		"ADAPTBOT_REGISTRY":  filepath.Join(dir, "tools_registry.json"),
		"ADAPTBOT_SANDBOX":   "inprocess",
		"ADAPTBOT_TRACES":    "off",
	}
	for k, v := range env {
		full[k] = v
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	full["ADAPTBOT_ADDR"] = ln.Addr().String()
	cfg, err := config.Load(func(k string) string { return full[k] })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	w, err := openWorld(context.Background(), cfg, hooks{}, nil, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := web.NewServer(w.service(nil, nil, nil, nil, nil), testAuth(t, cfg), nil, edgeOptions(cfg, log))
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(context.Background()); w.Close() })
	return w.reg, ln.Addr().String()
}

func TestExportCommand(t *testing.T) {
	dir := toolsHome(t, "calculator", "unit_converter", "weather_forecast")
	env := cliEnv(dir, closedAddr(t)) // no server: an export only reads
	cli := func(args ...string) (string, error) { return runEnv(t, env, strings.NewReader(""), args...) }

	out := filepath.Join(t.TempDir(), "mytools")
	text, err := cli("tools", "export", "calculator", "unit_converter", "--out", out)
	if err != nil || !strings.Contains(text, "exported calculator, unit_converter to "+out) {
		t.Fatalf("export --out: %v\n%s", err, text)
	}
	for _, f := range []string{"go.mod", "main.go", "tools/calculator/calculator_test.go", "README.md", "LICENSE"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the module lacks %s", f)
		}
	}
	if gomod, _ := os.ReadFile(filepath.Join(out, "go.mod")); !bytes.HasPrefix(gomod, []byte("module mytools\n")) {
		t.Errorf("go.mod starts %.40q", gomod)
	}

	bundle := filepath.Join(t.TempDir(), "tools.tar.gz")
	text, err = cli("tools", "export", "calculator", "--bundle", bundle, "--format", "json")
	if err != nil || !strings.Contains(text, `"bundle": "`+bundle+`"`) {
		t.Fatalf("export --bundle: %v\n%s", err, text)
	}
	f, err := os.Open(bundle)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := shipping.ReadBundle(f); err != nil || strings.Join(b.Names(), ",") != "calculator" {
		t.Errorf("the bundle written: %v", err)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "export", "--out", out}, "name the tools"},
		{[]string{"tools", "export", "calculator"}, "give --out DIR or --bundle FILE"},
		{[]string{"tools", "export", "calculator", "--out", out}, "is not empty"},
		{[]string{"tools", "export", "nope", "--out", t.TempDir()}, `no tool named "nope"`},
	} {
		if _, err := cli(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// TestImportThroughServer brings a bundle made from one AdaptBot's folder
// into another's, through that one's server, as `adaptbot tools import`.
func TestImportThroughServer(t *testing.T) {
	from := toolsHome(t, "calculator", "text_stats")
	bundle := filepath.Join(t.TempDir(), "tools.tar.gz")
	if out, err := runEnv(t, cliEnv(from, closedAddr(t)), nil, "tools", "export", "calculator", "text_stats", "--bundle", bundle); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}

	to := toolsHome(t, "unit_converter")
	reg, addr := shipServer(t, to, nil)
	env := cliEnv(to, addr)
	cli := func(args ...string) (string, error) { return runEnv(t, env, strings.NewReader(""), args...) }

	out, err := cli("tools", "import", bundle)
	if err != nil || !strings.Contains(out, "calculator: imported as version 1, serving") || !strings.Contains(out, "text_stats: imported as version 1, serving") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if e, ok := reg.Entry("calculator"); !ok || e.Origin != "imported" {
		t.Errorf("calculator on the server: %+v", e)
	}
	if out, err := cli("tools", "run", "calculator", `{"expression": "2+3*4"}`); err != nil || out != "2+3*4 = 14\n" {
		t.Errorf("run the imported calculator: %q, %v", out, err)
	}
	if _, err := cli("tools", "import", bundle); err == nil || !strings.Contains(err.Error(), "a tool named calculator exists here already") {
		t.Errorf("import again: %v, want a collision", err)
	}
	out, err = cli("tools", "import", bundle, "--rename", "calculator=calc", "--rename", "text_stats=words")
	if err != nil || !strings.Contains(out, "calc (calculator in the bundle): imported as version 1") {
		t.Errorf("import --rename: %v\n%s", err, out)
	}
	out, err = cli("tools", "import", bundle, "--replace", "--format", "json")
	if err != nil || !strings.Contains(out, `"replaced": true`) {
		t.Errorf("import --replace: %v\n%s", err, out)
	}

	// A bundle changed on the way is refused, and says which file.
	raw, _ := os.ReadFile(bundle)
	tampered := filepath.Join(t.TempDir(), "tampered.tar.gz")
	os.WriteFile(tampered, retar(t, raw, "tools/calculator/calculator.go", "// Package calculator does evil.\npackage calculator\n"), 0o644)
	if _, err := cli("tools", "import", tampered, "--replace"); err == nil || !strings.Contains(err.Error(), "tools/calculator/calculator.go does not match the manifest") {
		t.Errorf("a tampered bundle: %v", err)
	}

	// The API's answers.
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post("http://"+addr+"/api/tools/import", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	if code, body := post(`{"bundle": "not base64!"}`); code != 400 || !strings.Contains(body["error"].(string), "not base64") {
		t.Errorf("bad base64: %d %v", code, body)
	}
	if code, body := post(`{"bundle": "` + base64.StdEncoding.EncodeToString(raw) + `"}`); code != 409 || body["reason"] != "collision" || body["tool"] != "calculator" {
		t.Errorf("collision over the API: %d %v", code, body)
	}
	if code, _ := post(`{}`); code != 400 {
		t.Errorf("no bundle: %d", code)
	}
}

func TestImportUnderReview(t *testing.T) {
	from := toolsHome(t, "calculator")
	bundle := filepath.Join(t.TempDir(), "calc.tar.gz")
	if out, err := runEnv(t, cliEnv(from, closedAddr(t)), nil, "tools", "export", "calculator", "--bundle", bundle); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	to := toolsHome(t)
	reg, addr := shipServer(t, to, map[string]string{"ADAPTBOT_REVIEW": "on"})
	out, err := runEnv(t, cliEnv(to, addr), nil, "tools", "import", bundle)
	if err != nil || !strings.Contains(out, "calculator: imported as version 1, pending review") {
		t.Fatalf("import with review on: %v\n%s", err, out)
	}
	if _, serving := reg.Tool("calculator"); serving {
		t.Error("a pending import serves")
	}
}

// retar rewrites one file of a bundle, leaving its manifest as it was.
func retar(t *testing.T, bundle []byte, name, data string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := rewriteTar(bytes.NewReader(bundle), &out, name, data); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func rewriteTar(in io.Reader, out io.Writer, name, data string) error {
	gz, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	zw := gzip.NewWriter(out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(tr)
		if h.Name == name {
			body = []byte(data)
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		tw.Write(body)
	}
	tw.Close()
	return zw.Close()
}

// TestImportNeedsTheBuilderRole: an import changes tools, so beyond
// loopback it takes a key, and a key without the builder role is refused,
// before the bundle is even read.
func TestImportNeedsTheBuilderRole(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cfg := config.Config{Addr: "0.0.0.0:3000", AdminToken: "s3cret-admin-token"}
	ae, people := testUsers(t, cfg)
	_, userKey, err := people.Add(context.Background(), "ann", identity.User)
	if err != nil {
		t.Fatal(err)
	}
	s := web.NewServer(service.New(service.Deps{Log: log}), ae, nil, edgeOptions(cfg, log))
	client := listening(t, s)
	for _, tt := range []struct {
		auth string
		want int
		msg  string
	}{{"", 401, "sign in"}, {"Bearer wrong", 401, "not valid"}, {"Bearer " + userKey, 403, "builder role"}, {"Bearer s3cret-admin-token", 503, "cannot build"}} {
		req := httptest.NewRequest("POST", "/api/tools/import", strings.NewReader(`{"bundle": "AAAA"}`))
		req.Host = "127.0.0.1:3000"
		req.Header.Set("Content-Type", "application/json")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := client.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		if body, _ := io.ReadAll(resp.Body); resp.StatusCode != tt.want || !strings.Contains(string(body), tt.msg) {
			t.Errorf("auth %q: %d %s, want %d saying %q", tt.auth, resp.StatusCode, body, tt.want, tt.msg)
		}
	}
}
