package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"adaptbot/sandbox"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's settings table")

func TestConfigLandlock(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want sandbox.Landlock
		err  string
	}{
		{env: nil, want: sandbox.LandlockAuto},
		{env: map[string]string{"ADAPTBOT_SANDBOX_LANDLOCK": "require"}, want: sandbox.LandlockRequire},
		{env: map[string]string{"ADAPTBOT_SANDBOX_LANDLOCK": "OFF"}, want: sandbox.LandlockOff},
		{env: map[string]string{"ADAPTBOT_SANDBOX_LANDLOCK": "yes"}, err: `ADAPTBOT_SANDBOX_LANDLOCK="yes": use auto, require or off`},
		{env: map[string]string{"ADAPTBOT_SANDBOX_LANDLOCK": "require", "ADAPTBOT_SANDBOX": "inprocess"}, err: "needs ADAPTBOT_SANDBOX=workers"},
	} {
		c, err := Load(func(k string) string { return tt.env[k] })
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.env, err, tt.err)
			}
			continue
		}
		if err != nil || c.Landlock != tt.want {
			t.Errorf("%v: %q, %v; want %q", tt.env, c.Landlock, err, tt.want)
		}
	}
}

func TestConfigMaxCallDepth(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want int
		err  string
	}{
		{"", 4, ""},
		{"2", 2, ""},
		{"0", 0, "ADAPTBOT_MAX_CALL_DEPTH"},
		{"deep", 0, "ADAPTBOT_MAX_CALL_DEPTH"},
	} {
		c, err := Load(func(k string) string {
			if k == "ADAPTBOT_MAX_CALL_DEPTH" {
				return tt.v
			}
			return ""
		})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one naming %s", tt.v, err, tt.err)
			}
			continue
		}
		if err != nil || c.MaxCallDepth != tt.want {
			t.Errorf("%q: %d, %v; want %d", tt.v, c.MaxCallDepth, err, tt.want)
		}
	}
}

// TestEdgeSettings checks how the limits are read and refused.
func TestEdgeSettings(t *testing.T) {
	c, err := Load(func(string) string { return "" })
	if err != nil || c.Edge.MaxMessage != 32<<10 || c.Edge.MaxInflight != 64 || c.Edge.Rate != 60 || c.Edge.Per != time.Minute {
		t.Errorf("defaults = %+v, %v", c.Edge, err)
	}
	env := map[string]string{"ADAPTBOT_MAX_MESSAGE": "1MiB", "ADAPTBOT_MAX_INFLIGHT": "3", "ADAPTBOT_RATE_LIMIT": "5/s",
		"ADAPTBOT_ALLOWED_ORIGINS": "https://A.example/, http://b.example:8080", "ADAPTBOT_ALLOWED_HOSTS": "bot.lan,[fd00::1]"}
	c, err = Load(func(k string) string { return env[k] })
	if err != nil || c.Edge.MaxMessage != 1<<20 || c.Edge.MaxInflight != 3 || c.Edge.Rate != 5 || c.Edge.Per != time.Second ||
		strings.Join(c.Edge.AllowedOrigins, " ") != "https://a.example http://b.example:8080" || strings.Join(c.Edge.AllowedHosts, " ") != "bot.lan fd00::1" {
		t.Errorf("set = %+v, %v", c.Edge, err)
	}
	if c, _ := Load(func(k string) string { return map[string]string{"ADAPTBOT_RATE_LIMIT": "off"}[k] }); c.Edge.Rate != 0 {
		t.Errorf("off = %+v", c.Edge)
	}
	env = map[string]string{"ADAPTBOT_MAX_MESSAGE": "lots", "ADAPTBOT_MAX_INFLIGHT": "0", "ADAPTBOT_RATE_LIMIT": "60/fortnight"}
	_, err = Load(func(k string) string { return env[k] })
	for _, want := range []string{"ADAPTBOT_MAX_MESSAGE", "ADAPTBOT_MAX_INFLIGHT", "ADAPTBOT_RATE_LIMIT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad %s not reported: %v", want, err)
		}
	}
}

func TestIdentitySettings(t *testing.T) {
	for _, tt := range []struct {
		env map[string]string
		err string
	}{
		{map[string]string{"ADAPTBOT_OIDC_ISSUER": "https://id.example"}, "also needs ADAPTBOT_OIDC_CLIENT_ID and ADAPTBOT_OIDC_CLIENT_SECRET"},
		{map[string]string{"ADAPTBOT_TRUSTED_HEADER": "X-Forwarded-User"}, "needs ADAPTBOT_TRUSTED_PROXIES"},
		{map[string]string{"ADAPTBOT_TRUSTED_PROXIES": "10.0.0.1"}, "ADAPTBOT_TRUSTED_HEADER is not"},
		{map[string]string{"ADAPTBOT_TRUSTED_PROXIES": "proxy.local", "ADAPTBOT_TRUSTED_HEADER": "X"}, `"proxy.local" is neither an address nor a CIDR`},
		{map[string]string{"ADAPTBOT_OIDC_ROLES_CLAIM": "groups:x=root"}, `no role named "root"`},
		{map[string]string{"ADAPTBOT_OIDC_ROLES_CLAIM": "groups"}, "need ADAPTBOT_OIDC_ISSUER"},
		{map[string]string{"ADAPTBOT_SESSION_TTL": "forever"}, "want a duration"},
	} {
		_, err := Load(func(k string) string { return tt.env[k] })
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%v: %v; want %q", tt.env, err, tt.err)
		}
	}
}

// TestTelemetryConfig: the OTEL_* settings reach the telemetry config
// through the settings table, a bad one is reported by name, and the
// headers and metrics token are secrets.
func TestTelemetryConfig(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20s3cret",
		"ADAPTBOT_OTEL_CONTENT": "on", "ADAPTBOT_REPLICA_ID": "r1", "ADAPTBOT_METRICS_TOKEN": "tok3n"}
	c, err := Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if tc := c.Telemetry; tc.URL != "http://localhost:4318/v1/traces" || tc.Headers["Authorization"] != "Basic s3cret" ||
		!tc.Content || tc.ServiceName != "adaptbot" || tc.Instance != "r1" || c.MetricsToken != "tok3n" {
		t.Errorf("telemetry config %+v, metrics token %q", tc, c.MetricsToken)
	}
	var out strings.Builder
	if err := Write(&out, c); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "s3cret") || strings.Contains(s, "tok3n") || !strings.Contains(s, "OTEL_SERVICE_NAME") {
		t.Errorf("adaptbot config shows a secret, or lacks the OTEL settings:\n%s", s)
	}
	env = map[string]string{"OTEL_TRACES_SAMPLER": "sometimes", "ADAPTBOT_OTEL_CONTENT": "yes"}
	_, err = Load(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), `OTEL_TRACES_SAMPLER="sometimes"`) || !strings.Contains(err.Error(), `ADAPTBOT_OTEL_CONTENT="yes"`) {
		t.Errorf("bad telemetry settings: %v", err)
	}
}

// TestDocsConfigTable: docs/configuration.md's table is the settings
// table, so every setting is documented. go test ./config -run DocsConfig
// -update rewrites it.
func TestDocsConfigTable(t *testing.T) {
	raw, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	const begin, end = "<!-- settings: begin -->\n", "<!-- settings: end -->"
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("docs/configuration.md has no %q ... %q section", begin, end)
	}
	want := MarkdownTable()
	if got := readme[i+len(begin) : j]; got != want {
		if *update {
			os.WriteFile("../docs/configuration.md", []byte(readme[:i+len(begin)]+want+readme[j:]), 0o644)
			return
		}
		t.Errorf("docs/configuration.md's table is not the settings table; run go test ./config -run DocsConfig -update")
	}
}

// TestJSON: `adaptbot config --format json` has a row for every setting,
// secrets as set or unset, never their values.
func TestJSON(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-secret-value", "ADAPTBOT_SHORTLIST": "7"}
	c, err := Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	rows := JSON(c)
	if len(rows) != len(settings) {
		t.Errorf("%d rows, want one per setting (%d)", len(rows), len(settings))
	}
	for _, r := range rows {
		switch r["name"] {
		case "OPENAI_API_KEY":
			if r["set"] != true || r["value"] != nil || r["from"] != "environment" {
				t.Errorf("a secret's row: %v", r)
			}
		case "ADAPTBOT_SHORTLIST":
			if r["value"] != "7" || r["from"] != "environment" {
				t.Errorf("a setting's row: %v", r)
			}
		}
	}
}

// TestConfigMasksURLCredentials: `adaptbot config` shows where a URL
// points, never the credentials embedded in it (issue 27).
func TestConfigMasksURLCredentials(t *testing.T) {
	env := map[string]string{
		"OPENAI_BASE_URL":             "https://bob:hunter2-secret@llm.example.com/v1",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "https://tok3n-secret@otel.example.com:4318",
	}
	c, _ := Load(func(k string) string { return env[k] })
	var b strings.Builder
	if err := Write(&b, c); err != nil {
		t.Fatal(err)
	}
	js := fmt.Sprint(JSON(c))
	for _, out := range []string{b.String(), js} {
		if strings.Contains(out, "hunter2-secret") || strings.Contains(out, "tok3n-secret") {
			t.Errorf("a URL's credentials are shown:\n%s", out)
		}
		if !strings.Contains(out, "llm.example.com/v1") {
			t.Errorf("the URL itself is not shown:\n%s", out)
		}
	}
}

// TestPathsAreAbsolute: every path is absolute once loaded, resolved
// against ADAPTBOT_HOME (relative ones too) or, without it, the working
// folder: they go to the go command, to workers started in / and to
// Landlock, where a relative path names another folder.
func TestPathsAreAbsolute(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	for _, tt := range []struct {
		home, want string
	}{
		{"", sub},
		{".", sub},
		{"..", root},
		{root, root},
	} {
		c, err := Load(func(k string) string { return map[string]string{"ADAPTBOT_HOME": tt.home}[k] })
		if err != nil {
			t.Fatalf("ADAPTBOT_HOME=%q: %v", tt.home, err)
		}
		for name, got := range map[string]string{"home": c.Home, "tools": c.ToolsDir, "registry": c.Registry, "benchmarks": c.Benchmarks,
			"mcp config": c.MCPConfig, "traces": c.Traces, "users": c.Identity.Users} {
			if !filepath.IsAbs(got) || !strings.HasPrefix(got, tt.want) {
				t.Errorf("ADAPTBOT_HOME=%q: %s is %q, want it absolute, in %s", tt.home, name, got, tt.want)
			}
		}
		if want := filepath.Join(tt.want, "tools"); c.ToolsDir != want {
			t.Errorf("ADAPTBOT_HOME=%q: tools %q, want %q", tt.home, c.ToolsDir, want)
		}
		if g := c.NativeGo; g != "" && !filepath.IsAbs(g) {
			t.Errorf("the go command %q is not absolute", g)
		}
	}
}
