package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConfigGood(t *testing.T) {
	tests := []struct {
		name, src string
		want      []Server
		warnings  []string
	}{
		{
			name: "mcpServers form",
			src: `{"mcpServers": {
				"weather": {"command": "npx", "args": ["-y", "@acme/weather"], "env": {"API_KEY": "k"}},
				"search": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}, "timeout": "5s", "description": "Web search."},
				"legacy": {"type": "sse", "url": "http://localhost:8080/sse", "disabled": true}
			}}`,
			want: []Server{
				{Name: "weather", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@acme/weather"}, Env: map[string]string{"API_KEY": "k"}},
				{Name: "search", Transport: TransportHTTP, URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer t"}, Timeout: 5 * time.Second, Description: "Web search."},
				{Name: "legacy", Transport: TransportSSE, URL: "http://localhost:8080/sse", Disabled: true},
			},
		},
		{
			name: "array form",
			src: `[
				{"name": "fs", "transport": {"type": "stdio", "command": "mcp-fs", "args": ["/tmp"], "env": {}}},
				{"name": "api", "description": "An API.", "timeout": 2, "transport": {"type": "http", "url": "http://127.0.0.1:9000/mcp"}}
			]`,
			want: []Server{
				{Name: "fs", Transport: TransportStdio, Command: "mcp-fs", Args: []string{"/tmp"}, Env: map[string]string{}},
				{Name: "api", Description: "An API.", Timeout: 2 * time.Second, Transport: TransportHTTP, URL: "http://127.0.0.1:9000/mcp"},
			},
		},
		{
			name:     "servers key and unknown keys",
			src:      `{"servers": {"x": {"type": "stdio", "command": "x", "alwaysAllow": []}}, "inputs": []}`,
			want:     []Server{{Name: "x", Transport: TransportStdio, Command: "x"}},
			warnings: []string{"f.json: inputs: unknown key", "f.json: servers.x.alwaysAllow: unknown key, ignored"},
		},
		{
			name: "empty",
			src:  `{"mcpServers": {}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("f.json", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Servers, tt.want) {
				t.Errorf("servers:\n got %+v\nwant %+v", cfg.Servers, tt.want)
			}
			if len(cfg.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %q", cfg.Warnings, tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.HasPrefix(cfg.Warnings[i], w) {
					t.Errorf("warning %q, want it to start %q", cfg.Warnings[i], w)
				}
			}
		})
	}
}

func TestParseConfigProblems(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // every problem, in order
	}{
		{"neither", `{"mcpServers": {"weather": {"args": []}}}`,
			[]string{`f.json: mcpServers.weather: needs "command" (a stdio server) or "url" (an HTTP server)`}},
		{"both", `{"mcpServers": {"weather": {"command": "w", "url": "http://x"}}}`,
			[]string{`f.json: mcpServers.weather: has both "command" and "url"`}},
		{"bad url", `{"mcpServers": {"a": {"url": "ftp://x"}, "b": {"url": "http://"}, "c": {"url": "::"}}}`,
			[]string{`f.json: mcpServers.a.url: "ftp://x": want an http:// or https:// URL`, `f.json: mcpServers.b.url: "http://" has no host`, `f.json: mcpServers.c.url: "::" is not a URL`}},
		{"unknown type", `{"mcpServers": {"w": {"type": "ws", "url": "http://x"}}}`,
			[]string{`f.json: mcpServers.w.type: unknown transport type "ws": use "stdio", "http" or "sse"`}},
		{"type mismatch", `{"mcpServers": {"w": {"type": "http", "command": "w"}}}`,
			[]string{`f.json: mcpServers.w: is an http server but has "command"`, `f.json: mcpServers.w: is an http server but has no "url"`}},
		{"wrong types", `{"mcpServers": {"w": {"command": 1, "args": "x", "env": {"K": 2}, "timeout": "soon"}}}`,
			[]string{`f.json: mcpServers.w.command: want a string, got a number`, `f.json: mcpServers.w.args: want an array of strings, got a string`, `f.json: mcpServers.w.env.K: want a string, got a number`, `f.json: mcpServers.w.timeout: "soon": want a positive duration`}},
		{"empty command", `{"mcpServers": {"w": {"command": " "}}}`,
			[]string{`f.json: mcpServers.w.command: is empty`}},
		{"twice", `{"mcpServers": {"w": {"command": "a"}, "w": {"command": "b"}}}`,
			[]string{`f.json: mcpServers.w: is defined twice`}},
		{"reserved and bad names", `{"mcpServers": {"local": {"command": "a"}, "a/b": {"command": "b"}}}`,
			[]string{`f.json: mcpServers.local: the name "local" is reserved`, `f.json: mcpServers.a/b: bad server name "a/b"`}},
		{"no mcpServers", `{"servers2": {}}`,
			[]string{`f.json: no "mcpServers" object`}},
		{"mcpServers not an object", `{"mcpServers": []}`,
			[]string{`f.json: mcpServers: want an object of servers by name, got an array`}},
		{"syntax", "{\"mcpServers\": {\n  \"w\": {\"command\": \"a\",}\n}}",
			[]string{`f.json: line 2, column 24: invalid JSON`}},
		{"truncated", `{"mcpServers": {`,
			[]string{`f.json: line 1, column 17: invalid JSON`}},
		{"empty file", ``, []string{`f.json: the file is empty`}},
		{"scalar", `42`, []string{`f.json: want {"mcpServers": {...}} or an array of servers, got a number`}},
		{"array: missing name and transport", `[{"transport": {"type": "stdio", "command": "a"}}, {"name": "b"}]`,
			[]string{`f.json: [0]: needs "name"`, `f.json: [1] (b): needs "transport"`}},
		{"array: no type", `[{"name": "a", "transport": {"command": "a"}}]`,
			[]string{`f.json: [0] (a).transport: needs "type": "stdio", "http" or "sse"`}},
		{"array: unknown type", `[{"name": "a", "transport": {"type": "grpc", "url": "http://x"}}]`,
			[]string{`f.json: [0] (a).transport.type: unknown transport type "grpc"`}},
		{"array: duplicate names", `[{"name": "a", "transport": {"type": "stdio", "command": "a"}}, {"name": "a", "transport": {"type": "http", "url": "http://x"}}]`,
			[]string{`f.json: [1] (a): the name "a" is already used by [0] (a)`}},
		{"array: bad url", `[{"name": "a", "transport": {"type": "http", "url": "localhost:3000"}}]`,
			[]string{`f.json: [0] (a).transport.url: "localhost:3000": want an http:// or https:// URL`}},
		{"array: not objects", `[1]`, []string{`f.json: [0]: want an object with "name" and "transport", got a number`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.json", []byte(tt.src))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *Error", err)
			}
			lines := strings.Split(ce.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("problems:\n  %s\nwant %d:\n  %s", strings.Join(lines, "\n  "), len(tt.want), strings.Join(tt.want, "\n  "))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d = %q, want it to start %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "none.json: no such file") {
		t.Errorf("missing file: %v", err)
	}
	path := filepath.Join(dir, "mcp_servers.json")
	os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "a"}, "b": {"url": "http://b", "disabled": true}}}`), 0o644)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Enabled(); len(got) != 1 || got[0].Name != "a" {
		t.Errorf("Enabled() = %+v", got)
	}
	if got, want := cfg.Servers[0].Describe(), "stdio: a"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}

// TestLoadOptional: the default file may be missing (no servers); a file
// the user named may not; a bad file says how to check it.
func TestLoadOptional(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "none.json")
	if cfg, err := LoadOptional(none, false, nil); err != nil || len(cfg.Servers) != 0 || cfg.Path != none {
		t.Errorf("missing, optional: %+v, %v", cfg, err)
	}
	if _, err := LoadOptional(none, true, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing, required: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"mcpServers": {"a": {}}}`), 0o644)
	_, err := LoadOptional(bad, false, nil)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "adaptbot mcp validate -c "+bad) {
		t.Errorf("a bad file: %v", err)
	}
}

func TestExpandVars(t *testing.T) {
	env := map[string]string{"HOME": "/home/x", "TOKEN": "t0k", "EMPTY": ""}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		in, want string
		missing  []string
		err      string // a part of the error, if one is wanted
	}{
		{in: "plain", want: "plain"},
		{in: "${HOME}/data", want: "/home/x/data"},
		{in: "Bearer ${TOKEN}", want: "Bearer t0k"},
		{in: "${HOME}${TOKEN}", want: "/home/xt0k"},
		{in: "${PORT:-8080}", want: "8080"},
		{in: "${TOKEN:-unused}", want: "t0k"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${PORT:-}", want: ""},
		{in: "${URL:-http://127.0.0.1:9/a?b=c}", want: "http://127.0.0.1:9/a?b=c"},
		{in: "$HOME and $ and a$b", want: "$HOME and $ and a$b"},
		{in: "echo $$", want: "echo $$"},
		{in: "$${HOME}", want: "$${HOME}"},
		{in: "$$$${HOME}", want: "$$$${HOME}"},
		{in: "cost: $5, home: ${HOME}", want: "cost: $5, home: /home/x"},
		{in: "${MISSING}", missing: []string{"MISSING"}},
		{in: "${EMPTY}", missing: []string{"EMPTY"}},
		{in: "${A}-${B}-${A}", missing: []string{"A", "B"}},
		{in: "${HOME", err: "unterminated ${"},
		{in: "${}", err: "bad reference ${}"},
		{in: "${1X}", err: "bad reference ${1X}"},
		{in: "${X-d}", err: "bad reference ${X-d}"},
		{in: "${X:=d}", err: "bad reference ${X:=d}"},
		{in: "${A:-${B}}", err: "a default cannot hold another reference"},
	}
	for _, tt := range tests {
		got, missing, err := expandVars(tt.in, getenv)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expandVars(%q): err = %v, want one saying %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("expandVars(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(missing, tt.missing) {
			t.Errorf("expandVars(%q): missing = %q, want %q", tt.in, missing, tt.missing)
		}
		if tt.missing == nil && got != tt.want {
			t.Errorf("expandVars(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseConfigExpandsVars(t *testing.T) {
	env := map[string]string{"API_KEY": "sk-1", "DATA": "/srv/data", "TOKEN": "t0k", "HOST": "127.0.0.1"}
	getenv := func(k string) string { return env[k] }
	src := `{"mcpServers": {
		"files": {"command": "${TOOLS:-/opt/tools}/mcp-fs", "args": ["--root", "${DATA}", "--key=${API_KEY}", "sh -c 'echo $$ $HOME'"], "env": {"API_KEY": "${API_KEY}", "MODE": "${MODE:-fast}"}, "cwd": "${DATA}", "headers": {"X": "${UNSET_BUT_IGNORED}"}},
		"search": {"url": "http://${HOST}:${PORT:-9000}/mcp?key=${API_KEY}", "headers": {"Authorization": "Bearer ${TOKEN}"}, "env": {"E": "${UNSET_BUT_IGNORED}"}}
	}}`
	cfg, err := ParseEnv("f.json", []byte(src), getenv)
	if err != nil {
		t.Fatal(err)
	}
	files, search := cfg.Servers[0], cfg.Servers[1]
	if want := "/opt/tools/mcp-fs"; files.Command != want {
		t.Errorf("command = %q, want %q", files.Command, want)
	}
	if want := []string{"--root", "/srv/data", "--key=sk-1", "sh -c 'echo $$ $HOME'"}; !reflect.DeepEqual(files.Args, want) {
		t.Errorf("args = %q, want %q", files.Args, want)
	}
	if want := map[string]string{"API_KEY": "sk-1", "MODE": "fast"}; !reflect.DeepEqual(files.Env, want) {
		t.Errorf("env = %q, want %q", files.Env, want)
	}
	if files.Dir != "${DATA}" {
		t.Errorf("cwd = %q: only command, args, env, url and headers are expanded", files.Dir)
	}
	if want := "http://127.0.0.1:9000/mcp?key=sk-1"; search.URL != want {
		t.Errorf("url = %q, want %q", search.URL, want)
	}
	if want := map[string]string{"Authorization": "Bearer t0k"}; !reflect.DeepEqual(search.Headers, want) {
		t.Errorf("headers = %q, want %q", search.Headers, want)
	}
	// Listings show the file as written: a secret passed in the arguments
	// or the URL is not printed.
	if got := files.Describe(); strings.Contains(got, "sk-1") || !strings.Contains(got, "--key=${API_KEY}") {
		t.Errorf("Describe() = %q, want the arguments as written", got)
	}
	if got, want := search.Describe(), "http: http://${HOST}:${PORT:-9000}/mcp?key=${API_KEY}"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}

func TestParseConfigUnsetVars(t *testing.T) {
	getenv := func(k string) string { return map[string]string{"SET": "x", "EMPTY": ""}[k] }
	tests := []struct {
		name, src string
		want      []string // every problem, in order
	}{
		{"env", `{"mcpServers": {"weather": {"command": "w", "env": {"API_KEY": "${WEATHER_KEY}", "OK": "${SET}"}}}}`,
			[]string{`f.json: mcpServers.weather.env.API_KEY: environment variable WEATHER_KEY is not set (or is empty): set it, or give a default with ${WEATHER_KEY:-default}`}},
		{"empty counts as unset", `{"mcpServers": {"weather": {"command": "w", "args": ["${SET}", "${EMPTY}"]}}}`,
			[]string{`f.json: mcpServers.weather.args[1]: environment variable EMPTY is not set`}},
		{"command and url", `{"mcpServers": {"a": {"command": "${BIN}"}, "b": {"serverUrl": "${BASE}/mcp"}}}`,
			[]string{`f.json: mcpServers.a.command: environment variable BIN is not set`, `f.json: mcpServers.b.serverUrl: environment variable BASE is not set`}},
		{"several in one field", `{"mcpServers": {"s": {"url": "http://h", "headers": {"Authorization": "${USER_NAME}:${PASSWORD}"}}}}`,
			[]string{`f.json: mcpServers.s.headers.Authorization: environment variables USER_NAME, PASSWORD are not set`}},
		{"array form", `[{"name": "s", "transport": {"type": "http", "url": "https://${HOST}/mcp"}}]`,
			[]string{`f.json: [0] (s).transport.url: environment variable HOST is not set`}},
		{"bad reference", `{"mcpServers": {"w": {"command": "w", "args": ["${NAME"]}}}`,
			[]string{`f.json: mcpServers.w.args[0]: "${NAME": unterminated ${`}},
		{"empty after expansion", `{"mcpServers": {"w": {"command": "${BIN:-}"}}}`,
			[]string{`f.json: mcpServers.w.command: is empty`}},
		{"expanded url is checked", `{"mcpServers": {"w": {"url": "${BASE:-localhost:3000}"}}}`,
			[]string{`f.json: mcpServers.w.url: "localhost:3000": want an http:// or https:// URL`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv("f.json", []byte(tt.src), getenv)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *Error", err)
			}
			lines := strings.Split(ce.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("problems:\n  %s\nwant %d:\n  %s", strings.Join(lines, "\n  "), len(tt.want), strings.Join(tt.want, "\n  "))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d = %q, want it to start %q", i, lines[i], w)
				}
			}
		})
	}

	// A disabled server needs no variables: it is only warned about.
	cfg, err := ParseEnv("f.json", []byte(`{"mcpServers": {"w": {"command": "w", "env": {"K": "${NOPE}"}, "disabled": true}}}`), getenv)
	if err != nil {
		t.Fatalf("disabled server: %v", err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "mcpServers.w.env.K: environment variable NOPE is not set") || !strings.Contains(cfg.Warnings[0], "disabled") {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
}

func TestLoadConfigExpandsFromTheEnvironment(t *testing.T) {
	t.Setenv("ADAPTBOT_TEST_MCP_TOKEN", "from-env")
	path := filepath.Join(t.TempDir(), "mcp_servers.json")
	os.WriteFile(path, []byte(`{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${ADAPTBOT_TEST_MCP_TOKEN}"}}}}`), 0o644)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].Headers["Authorization"]; got != "Bearer from-env" {
		t.Errorf("Authorization = %q", got)
	}
}
