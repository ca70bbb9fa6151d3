package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"adaptbot/toolkit"
)

// allowLoopback is a policy that admits the test servers on 127.0.0.1 and
// nothing else that is not public.
var allowLoopback = toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(opts toolkit.Options, url string) (string, error) {
	ctx := toolkit.WithClient(context.Background(), toolkit.NewClient(opts))
	return toolkit.Get(ctx, url)
}

func TestGetDefaultPolicyRefusesLoopback(t *testing.T) {
	hit := false
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { hit = true })
	_, err := get(toolkit.Options{}, srv.URL)
	if !errors.Is(err, toolkit.ErrBlocked) {
		t.Fatalf("err %v, want ErrBlocked", err)
	}
	// Without a client in the context, the default one refuses it too.
	if _, err := toolkit.Get(context.Background(), srv.URL); !errors.Is(err, toolkit.ErrBlocked) {
		t.Fatalf("default client: err %v, want ErrBlocked", err)
	}
	if hit {
		t.Error("the refused server was reached")
	}
}

func TestGetBlockedAddresses(t *testing.T) {
	// Refused before dialling: no packet leaves for these.
	for _, url := range []string{
		"http://127.0.0.1/", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/",
		"http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:169.254.169.254]/", "http://0.0.0.0/",
	} {
		if _, err := get(toolkit.Options{}, url); !errors.Is(err, toolkit.ErrBlocked) {
			t.Errorf("GET %s: %v, want ErrBlocked", url, err)
		}
	}
}

func TestGetAllowlisted(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("User-Agent"); !strings.HasPrefix(got, "AdaptBot-tool/") {
			t.Errorf("User-Agent %q", got)
		}
		fmt.Fprint(w, `{"answer":42}`)
	})
	body, err := get(toolkit.Options{Policy: allowLoopback}, srv.URL)
	if err != nil || body != `{"answer":42}` {
		t.Fatalf("got %q, %v", body, err)
	}
	var v struct{ Answer int }
	ctx := toolkit.WithClient(context.Background(), toolkit.NewClient(toolkit.Options{Policy: allowLoopback}))
	if err := toolkit.GetJSON(ctx, srv.URL, &v); err != nil || v.Answer != 42 {
		t.Fatalf("GetJSON: %+v, %v", v, err)
	}
}

// A redirect from an allowed server is checked like the first request.
func TestGetRedirectToBlockedAddress(t *testing.T) {
	for _, target := range []string{
		"http://10.0.0.1/secret",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::1]:8080/",
		"http://127.0.0.2/", // loopback, but not the allowlisted address
	} {
		t.Run(target, func(t *testing.T) {
			srv := server(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, http.StatusFound)
			})
			_, err := get(toolkit.Options{Policy: allowLoopback}, srv.URL)
			if !errors.Is(err, toolkit.ErrBlocked) {
				t.Fatalf("err %v, want ErrBlocked", err)
			}
		})
	}
}

func TestGetRedirectToOtherScheme(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	if _, err := get(toolkit.Options{Policy: allowLoopback}, srv.URL); err == nil || !strings.Contains(err.Error(), `scheme "file"`) {
		t.Fatalf("err %v, want the scheme refused", err)
	}
	if _, err := get(toolkit.Options{}, "file:///etc/passwd"); err == nil || !strings.Contains(err.Error(), `scheme "file"`) {
		t.Fatalf("err %v, want the scheme refused", err)
	}
}

func TestGetSizeCap(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", len(r.URL.Path)-1))
	})
	opts := toolkit.Options{Policy: allowLoopback, MaxBytes: 10}
	if body, err := get(opts, srv.URL+"/0123456789"); err != nil || len(body) != 10 {
		t.Fatalf("at the cap: %d bytes, %v", len(body), err)
	}
	if _, err := get(opts, srv.URL+"/0123456789a"); err == nil || !strings.Contains(err.Error(), "larger than the 10-byte cap") {
		t.Fatalf("over the cap: %v", err)
	}
}

func TestGetStatus(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such thing", http.StatusNotFound)
	})
	_, err := get(toolkit.Options{Policy: allowLoopback}, srv.URL+"/missing?key=secret")
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "no such thing") {
		t.Fatalf("err %v, want the 404 and its body", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the query string: %v", err)
	}
}

func TestGetRewrite(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.URL.Path) })
	opts := toolkit.Options{Policy: allowLoopback, Rewrite: map[string]string{"api.example.com": srv.URL}}
	if body, err := get(opts, "https://api.example.com/v1/x"); err != nil || body != "/v1/x" {
		t.Fatalf("got %q, %v", body, err)
	}
}

func TestQueryEscape(t *testing.T) {
	if got := toolkit.QueryEscape("a b&c"); got != "a+b%26c" {
		t.Errorf("QueryEscape = %q", got)
	}
}
