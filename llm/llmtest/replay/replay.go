// Package replay serves recorded model-provider traffic on loopback, for
// tests: the real provider clients talk HTTP to it and get the bytes a real
// model sent. Recordings are httprr traces (the format langchaingo records
// its tests in): a first line "httprr trace v1", then for each exchange a
// line "REQLEN RESPLEN" followed by the raw request and the raw response.
//
// A request is answered with the first unused recorded exchange of the same
// method and endpoint; everything else in the request (model name, messages,
// options) is ignored, since AdaptBot's prompts are not the recorder's.
// Nothing here reaches outside the machine.
package replay

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Exchange is one recorded request and the response it got.
type Exchange struct {
	Method string
	// Path is the request's URL path, e.g. /api/v1/chat/completions.
	Path string
	// Request is the recorded request body.
	Request []byte
	Status  int
	Header  http.Header
	Body    []byte
}

// Load reads an httprr file.
func Load(path string) ([]Exchange, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ex, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ex, nil
}

// Parse reads an httprr trace.
func Parse(b []byte) ([]Exchange, error) {
	const magic = "httprr trace v1\n"
	if !bytes.HasPrefix(b, []byte(magic)) {
		return nil, fmt.Errorf("not an httprr trace: it does not begin with %q", strings.TrimSpace(magic))
	}
	b = b[len(magic):]
	var out []Exchange
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("exchange %d: no length line", len(out)+1)
		}
		var reqLen, respLen int
		if _, err := fmt.Sscanf(string(b[:nl]), "%d %d", &reqLen, &respLen); err != nil || reqLen < 0 || respLen < 0 {
			return nil, fmt.Errorf("exchange %d: bad length line %q", len(out)+1, b[:nl])
		}
		b = b[nl+1:]
		if len(b) < reqLen+respLen {
			return nil, fmt.Errorf("exchange %d: %d bytes recorded, the length line says %d", len(out)+1, len(b), reqLen+respLen)
		}
		ex, err := exchange(b[:reqLen], b[reqLen:reqLen+respLen])
		if err != nil {
			return nil, fmt.Errorf("exchange %d: %w", len(out)+1, err)
		}
		out = append(out, ex)
		b = b[reqLen+respLen:]
	}
	return out, nil
}

// exchange parses one raw request and response. Bodies are what follows
// the header block, whole: recorded Content-Length and transfer encodings
// are not trusted, the server sets its own.
func exchange(req, resp []byte) (Exchange, error) {
	line, _, reqBody, err := split(req)
	if err != nil {
		return Exchange{}, fmt.Errorf("request: %w", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return Exchange{}, fmt.Errorf("request line %q", line)
	}
	u, err := url.Parse(f[1])
	if err != nil {
		return Exchange{}, fmt.Errorf("request URL: %w", err)
	}
	status, header, body, err := split(resp)
	if err != nil {
		return Exchange{}, fmt.Errorf("response: %w", err)
	}
	sf := strings.Fields(status)
	if len(sf) < 2 {
		return Exchange{}, fmt.Errorf("status line %q", status)
	}
	code, err := strconv.Atoi(sf[1])
	if err != nil {
		return Exchange{}, fmt.Errorf("status line %q", status)
	}
	if strings.EqualFold(header.Get("Transfer-Encoding"), "chunked") {
		// Recorded as sent on the wire: take the chunks' contents.
		if b, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(body))); err == nil {
			body = b
		}
	}
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Content-Encoding", "Connection"} {
		header.Del(k)
	}
	return Exchange{Method: f[0], Path: u.Path, Request: reqBody, Status: code, Header: header, Body: body}, nil
}

// split cuts a raw HTTP message into its first line, headers and body.
// Header lines may end in CRLF or LF.
func split(msg []byte) (string, http.Header, []byte, error) {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(msg)))
	first, err := r.ReadLine()
	if err != nil {
		return "", nil, nil, err
	}
	h, err := r.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return "", nil, nil, err
	}
	// The body is what the header block leaves.
	end := bytes.Index(msg, []byte("\r\n\r\n"))
	skip := 4
	if lf := bytes.Index(msg, []byte("\n\n")); lf >= 0 && (end < 0 || lf < end) {
		end, skip = lf, 2
	}
	var body []byte
	if end >= 0 {
		body = msg[end+skip:]
	}
	return first, http.Header(h), body, nil
}

// Rename rewrites a function's name in the recorded requests and responses,
// for tests whose tools are named differently from the recording's. Only
// the quoted name changes ("old" becomes "new"); every other byte stays.
func Rename(ex []Exchange, old, new string) []Exchange {
	out := make([]Exchange, len(ex))
	q, nq := []byte(`"`+old+`"`), []byte(`"`+new+`"`)
	for i, e := range ex {
		e.Request = bytes.ReplaceAll(e.Request, q, nq)
		e.Body = bytes.ReplaceAll(e.Body, q, nq)
		out[i] = e
	}
	return out
}

// Server serves recorded exchanges on loopback.
type Server struct {
	// URL is the server's root, e.g. http://127.0.0.1:34567.
	URL string

	t    testing.TB
	mu   sync.Mutex
	todo []Exchange
	used []bool
	got  []Got
}

// Got is a request the server received.
type Got struct {
	Method, Path string
	Body         []byte
}

// New starts a server that answers with exs, in order, and stops it when
// the test ends. A request to a recorded endpoint that no unused exchange
// matches fails the test and gets a 599, so a test never passes on a reply
// that was not recorded; an endpoint never recorded gets a 404.
func New(t testing.TB, exs ...Exchange) *Server {
	t.Helper()
	s := &Server{t: t, todo: exs, used: make([]bool, len(exs))}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Got returns the requests received so far.
func (s *Server) Got() []Got {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Got(nil), s.got...)
}

// Left is how many recorded exchanges have not been served.
func (s *Server) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, u := range s.used {
		if !u {
			n++
		}
	}
	return n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.got = append(s.got, Got{Method: r.Method, Path: r.URL.Path, Body: body})
	var ex *Exchange
	for i := range s.todo {
		if !s.used[i] && s.todo[i].Method == r.Method && sameEndpoint(s.todo[i].Path, r.URL.Path) {
			s.used[i] = true
			ex = &s.todo[i]
			break
		}
	}
	recorded := false
	for i := range s.todo {
		recorded = recorded || s.todo[i].Method == r.Method && sameEndpoint(s.todo[i].Path, r.URL.Path)
	}
	s.mu.Unlock()
	if ex == nil && !recorded {
		// An endpoint the recording never saw (a model list at start-up):
		// not found, as a server without it would say.
		http.NotFound(w, r)
		return
	}
	if ex == nil {
		s.t.Errorf("replay: no recorded exchange left for %s %s", r.Method, r.URL.Path)
		http.Error(w, "replay: no recorded exchange left for this request", 599)
		return
	}
	for k, v := range ex.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(ex.Status)
	// Streams go out event by event, as a provider sends them.
	fl, _ := w.(http.Flusher)
	rest := ex.Body
	for len(rest) > 0 {
		n := bytes.Index(rest, []byte("\n\n"))
		if n < 0 || !stream(ex.Header) {
			n = len(rest)
		} else {
			n += 2
		}
		if _, err := w.Write(rest[:n]); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		rest = rest[n:]
	}
}

func stream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return strings.Contains(ct, "event-stream") || strings.Contains(ct, "ndjson")
}

// sameEndpoint matches a recorded path with a requested one by their last
// two segments (chat/completions, api/chat, v1/messages), so a recording
// made against one API root serves a client configured with another.
func sameEndpoint(recorded, got string) bool {
	if recorded == got {
		return true
	}
	tail := func(p string) string {
		parts := strings.Split(strings.Trim(p, "/"), "/")
		if len(parts) > 2 {
			parts = parts[len(parts)-2:]
		}
		return strings.Join(parts, "/")
	}
	return tail(recorded) == tail(got)
}
