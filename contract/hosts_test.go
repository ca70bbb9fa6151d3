package contract

import (
	"slices"
	"strings"
	"testing"
)

func TestParseHosts(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  string
	}{
		{"api.example.com, hooks.example.org", []string{"api.example.com", "hooks.example.org"}, ""},
		{" API.Example.com ,api.example.com,,", []string{"api.example.com"}, ""},
		{"hooks.example.org:8443, 10.0.0.5, [::1]:9000", []string{"hooks.example.org:8443", "10.0.0.5", "[::1]:9000"}, ""},
		{"", nil, "names no host"},
		{"https://api.example.com", nil, "no scheme"},
		{"api.example.com/v1", nil, "no scheme, path"},
		{"*.example.com", nil, "wildcard"},
		{"user@api.example.com", nil, "user"},
		{"api.example.com:99999", nil, "port"},
		{"api..example.com", nil, "not a DNS name"},
		{"-api.example.com", nil, "not a DNS name"},
	} {
		got, err := ParseHosts(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseHosts(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseHosts(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// actor builds a tool around body, with decl among its declarations.
func actor(decl, body string) string {
	return `// Package actor acts.
package actor

import (
	"context"

	"adaptbot/toolkit"
)

` + decl + `

// Input holds nothing.
type Input struct{}

// Execute acts.
func Execute(ctx context.Context, in Input) (string, error) {
	` + body + `
}
`
}

// TestActingToolsDeclareHosts: a source that shows a method other than
// GET or HEAD, or names a secret, must declare its hosts; the spec says
// them and the secrets it names.
func TestActingToolsDeclareHosts(t *testing.T) {
	post := `r, err := toolkit.PostJSON(ctx, "https://hooks.example.org/x", nil, 1)
	return r.Body, err`
	do := `r, err := toolkit.Do(ctx, toolkit.Request{Method: "delete", URL: "https://api.example.org/x"})
	return r.Body, err`
	variable := `req := toolkit.Request{Method: "PATCH", URL: "https://api.example.org/x"}
	r, err := toolkit.Do(ctx, req)
	return r.Body, err`
	secret := `return toolkit.Get(ctx, "https://api.example.org/x?key={{secret:API_KEY}}")`
	get := `r, err := toolkit.Do(ctx, toolkit.Request{Method: "GET", URL: "https://api.example.org/x"})
	return r.Body, err`
	for _, tt := range []struct {
		name, decl, body, want string
	}{
		{"PostJSON", "", post, "toolkit.PostJSON sends a POST: a tool that sends anything but GET or HEAD must declare the hosts it reaches"},
		{"Do", "", do, "toolkit.Do sends a DELETE: a tool that sends"},
		{"a Request literal", "", variable, `a toolkit.Request with Method "PATCH": a tool that sends`},
		{"a secret", "", secret, "the tool uses the secret API_KEY: a tool that uses a secret must declare the hosts it reaches"},
		{"a bad placeholder", `const Hosts = "api.example.org"`, `return toolkit.Get(ctx, "https://api.example.org/{{secret:bad name}}")`, "invalid secret name"},
		{"bad Hosts", `const Hosts = "https://api.example.org/"`, post, "Hosts: \"https://api.example.org/\" is not a host"},
		{"Hosts not a literal", `const h = "a.example.org"
const Hosts = h`, post, "Hosts must be a string literal"},
	} {
		_, err := Parse("actor", []byte(actor(tt.decl, tt.body)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v\nwant a problem saying %q", tt.name, err, tt.want)
		}
	}
	spec, err := Parse("actor", []byte(actor(`const Hosts = "hooks.example.org, api.example.org"`, post+"\n\t_ = \"{{secret:HOOK}} and {{secret:API_KEY}}\"")))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Hosts, []string{"hooks.example.org", "api.example.org"}) || !slices.Equal(spec.Secrets, []string{"API_KEY", "HOOK"}) || !spec.Network {
		t.Errorf("spec: hosts %v, secrets %v, network %v", spec.Hosts, spec.Secrets, spec.Network)
	}
	// Reading needs no declaration.
	if _, err := Parse("actor", []byte(actor("", get))); err != nil {
		t.Errorf("a GET: %v", err)
	}
}
