package main

// What TestCanarySecretNeverShows saw, kept to be searched for the
// canary's value at the end: every answer, printout, file, log, span and
// model request, under where it came from.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"adaptbot/egress/egresstest"
)

// canaryNote is one thing the test saw, under where it came from. A
// response's body is written into it as the client reads it.
type canaryNote struct {
	place string
	text  *syncBuffer
}

// canarySeen is everything a person or a file showed the test, to search
// for the canary at the end.
type canarySeen struct {
	mu    sync.Mutex
	notes []canaryNote
}

func (s *canarySeen) add(place, text string) {
	b := &syncBuffer{}
	b.Write([]byte(text))
	s.addBuffer(place, b)
}

func (s *canarySeen) addBuffer(place string, b *syncBuffer) {
	s.mu.Lock()
	s.notes = append(s.notes, canaryNote{place, b})
	s.mu.Unlock()
}

// RoundTrip sends req and keeps the answer's status, headers and body,
// as the caller reads it (a stream's events included).
func (s *canarySeen) RoundTrip(req *http.Request) (*http.Response, error) {
	place := req.Method + " " + req.URL.RequestURI()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		s.add(place+" (error)", err.Error())
		return nil, err
	}
	b := &syncBuffer{}
	fmt.Fprintf(b, "%s\n", resp.Status)
	resp.Header.Write(b) //nolint:errcheck // into memory
	b.Write([]byte("\n"))
	s.addBuffer(place, b)
	resp.Body = canaryTee{resp.Body, io.TeeReader(resp.Body, b)}
	return resp, nil
}

// canaryTee reads a body through a copy.
type canaryTee struct {
	io.Closer
	r io.Reader
}

func (c canaryTee) Read(p []byte) (int, error) { return c.r.Read(p) }

// client is an HTTP client whose every answer is kept.
func (s *canarySeen) client() *http.Client { return &http.Client{Transport: s} }

// post sends a request to the instance through the keeping client; it
// may run on any goroutine.
func (s *canarySeen) post(in *instance, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, in.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// send is post on the test's goroutine.
func (s *canarySeen) send(t *testing.T, in *instance, method, path, body string) (int, []byte) {
	t.Helper()
	code, raw, err := s.post(in, method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, raw
}

// sendJSON is send, decoding a JSON object's answer.
func (s *canarySeen) sendJSON(t *testing.T, in *instance, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, raw := s.send(t, in, method, path, body)
	var out map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: reply is not JSON: %v: %s", method, path, err, raw)
		}
	}
	return code, out
}

// events keeps a stream's events.
func (s *canarySeen) events(place string, evs []sse) {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev.name, ev.data)
	}
	s.add(place, b.String())
}

// cli runs a command of the binary and keeps what it printed.
func (s *canarySeen) cli(t *testing.T, env map[string]string, stdin string, args ...string) (string, error) {
	t.Helper()
	out, err := runEnv(t, env, strings.NewReader(stdin), args...)
	if err != nil {
		out += "\nerror: " + err.Error()
	}
	s.add("adaptbot "+strings.Join(args, " "), out)
	return out, err
}

// tree keeps every file under dir, a gzip file's contents unzipped.
func (s *canarySeen) tree(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".gz") {
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				if u, err := io.ReadAll(zr); err == nil {
					b = u
				}
			}
		}
		s.add(path, string(b))
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// bundle keeps every file of a bundle (.tar.gz).
func (s *canarySeen) bundle(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("bundle %s: %v", path, err)
	}
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("bundle %s: %v", path, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		s.add(path+"!"+h.Name, string(b))
	}
	return names
}

// The escapes a page, a JSON string or a URL may put on a value; a value
// that shows under one of them still shows.
var (
	jsEscape  = regexp.MustCompile(`\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|\\/`)
	pctEscape = regexp.MustCompile(`%[0-9a-fA-F]{2}`)
)

// canaryViews are text as it is and as a person would read it once
// unescaped: HTML entities, JSON and JavaScript escapes, percent-encoding
// (with + as a space, or not).
func canaryViews(text string) []string {
	unHTML := html.UnescapeString(text)
	unJS := jsEscape.ReplaceAllStringFunc(unHTML, func(m string) string {
		if m == `\/` {
			return "/"
		}
		n, err := strconv.ParseUint(m[2:], 16, 32)
		if err != nil {
			return m
		}
		if m[1] == 'x' {
			return string([]byte{byte(n)})
		}
		return string(rune(n))
	})
	unPct := func(s string) string {
		return pctEscape.ReplaceAllStringFunc(s, func(m string) string {
			n, _ := strconv.ParseUint(m[1:], 16, 8)
			return string([]byte{byte(n)})
		})
	}
	return []string{text, unHTML, unJS, unPct(unJS), unPct(strings.ReplaceAll(unJS, "+", " "))}
}

// canaryLeak is where a text shows a value: the form found, and the text
// around it (in the view it was found in).
type canaryLeak struct{ form, around string }

// canaryLeaks returns the forms of value that text shows, in any view.
func canaryLeaks(text, value string) []canaryLeak {
	var out []canaryLeak
	found := map[string]bool{}
	for _, v := range canaryViews(text) {
		for _, f := range egresstest.Leaks(v, value) {
			if found[f] {
				continue
			}
			found[f] = true
			at := strings.Index(v, f)
			out = append(out, canaryLeak{f, v[max(0, at-150):min(len(v), at+len(f)+150)]})
		}
	}
	return out
}

// check fails t for each note that shows value, quoting the text around
// it, and returns how many notes it searched.
func (s *canarySeen) check(t *testing.T, value string) int {
	t.Helper()
	s.mu.Lock()
	notes := append([]canaryNote(nil), s.notes...)
	s.mu.Unlock()
	for _, n := range notes {
		if leaks := canaryLeaks(n.text.String(), value); len(leaks) > 0 {
			t.Errorf("%s shows the secret's value as %q:\n…%s…", n.place, leaks[0].form, leaks[0].around)
		}
	}
	return len(notes)
}

// canaryValue is a fresh secret's value: random, with characters that
// each encoding writes its own way (+, space, /).
func canaryValue() string { return "canary-" + rand.Text() + "+ /x" }

// TestCanaryLeaksSeesEscapes: the search finds the value under each
// escape a page, JSON or a URL would put on it, and nothing in a text
// without it.
func TestCanaryLeaksSeesEscapes(t *testing.T) {
	v := canaryValue()
	j, _ := json.Marshal(v)
	for _, text := range []string{
		v, html.EscapeString(v), strings.ReplaceAll(v, "+", "&#43;"), string(j), strings.ReplaceAll(v, "/", `\u002f`),
		strings.NewReplacer("+", "%2B", " ", "%20").Replace(v), url.QueryEscape(v), url.PathEscape(v), "Authorization: Basic " + egresstest.Basic("me", v),
	} {
		if len(canaryLeaks("before "+text+" after", v)) == 0 {
			t.Errorf("not found in %q", text)
		}
	}
	if got := canaryLeaks("path=/services/[secret:HOOK] auth=Bearer [secret:HOOK]", v); len(got) != 0 {
		t.Errorf("found %q in a masked text", got)
	}
}

// canaryJSON encodes v as a person would read it: no HTML escapes.
func canaryJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("(not encoded: %v) %+v", err, v)
	}
	return b.String()
}
