package config

import (
	"testing"
)

// FuzzParse reads any servers file (anyone who can write the folder can
// write it): servers or problems, never a panic, and every server it
// accepts is one the hub can use.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs", "/tmp"], "env": {"K": "${HOME}"}}}}`,
		`{"mcpServers": {"remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN:-none}"}, "timeout": "5s"}}}`,
		`[{"name": "a", "transport": "sse", "url": "http://127.0.0.1:9/sse", "disabled": true}]`,
		`{"mcpServers": {"local": {"command": "x"}}}`,
		`{"mcpServers": {"x": {"command": "$${NAME}", "cwd": "/"}}}`,
		`[]`, `{}`, `null`, `{"mcpServers": 1}`, `[1, "a", {}]`,
	} {
		f.Add([]byte(s))
	}
	getenv := func(name string) string {
		if name == "HOME" {
			return "/home/fuzz"
		}
		return ""
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseEnv("servers.json", data, getenv)
		if err != nil {
			if e, ok := err.(*Error); !ok || len(e.Problems) == 0 || e.Error() == "" {
				t.Fatalf("an error with nothing to say: %#v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range cfg.Servers {
			if s.Name == "" || s.Name == Local || seen[s.Name] {
				t.Fatalf("accepted a server named %q (seen %v)", s.Name, seen)
			}
			seen[s.Name] = true
			switch s.Transport {
			case TransportStdio:
				if s.Command == "" {
					t.Fatalf("accepted stdio server %q without a command", s.Name)
				}
			case TransportHTTP, TransportSSE:
				if s.URL == "" {
					t.Fatalf("accepted %s server %q without a URL", s.Transport, s.Name)
				}
			default:
				t.Fatalf("accepted server %q with transport %q", s.Name, s.Transport)
			}
			_ = s.Describe()
		}
	})
}
