package mcp

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
		want      []ServerConfig
		warnings  []string
	}{
		{
			name: "mcpServers form",
			src: `{"mcpServers": {
				"weather": {"command": "npx", "args": ["-y", "@acme/weather"], "env": {"API_KEY": "k"}},
				"search": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}, "timeout": "5s", "description": "Web search."},
				"legacy": {"type": "sse", "url": "http://localhost:8080/sse", "disabled": true}
			}}`,
			want: []ServerConfig{
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
			want: []ServerConfig{
				{Name: "fs", Transport: TransportStdio, Command: "mcp-fs", Args: []string{"/tmp"}, Env: map[string]string{}},
				{Name: "api", Description: "An API.", Timeout: 2 * time.Second, Transport: TransportHTTP, URL: "http://127.0.0.1:9000/mcp"},
			},
		},
		{
			name:     "servers key and unknown keys",
			src:      `{"servers": {"x": {"type": "stdio", "command": "x", "alwaysAllow": []}}, "inputs": []}`,
			want:     []ServerConfig{{Name: "x", Transport: TransportStdio, Command: "x"}},
			warnings: []string{"f.json: inputs: unknown key", "f.json: servers.x.alwaysAllow: unknown key, ignored"},
		},
		{
			name: "empty",
			src:  `{"mcpServers": {}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig("f.json", []byte(tt.src))
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
			_, err := ParseConfig("f.json", []byte(tt.src))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
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
	if _, err := LoadConfig(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "none.json: no such file") {
		t.Errorf("missing file: %v", err)
	}
	path := filepath.Join(dir, "mcp_servers.json")
	os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "a"}, "b": {"url": "http://b", "disabled": true}}}`), 0o644)
	cfg, err := LoadConfig(path)
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
