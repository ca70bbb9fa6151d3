package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"

	"adaptbot/generator"
)

// client is the CLI's side of the one-writer rule: commands that change
// tools (create, modify, delete, rollback, run, approve) or users ask the
// running server over its HTTP API, with the caller's key (ADAPTBOT_KEY,
// else the admin token) when one is set, so the server alone writes
// tools/, the registry, the users and the CSV, and serves the change at
// once.
type client struct {
	base  string // http://host:port
	token string
	http  *http.Client
}

// newClient sends the caller's own key (ADAPTBOT_KEY), or else the admin
// token.
func newClient(cfg Config) *client {
	token := cfg.Identity.Key
	if token == "" {
		token = cfg.AdminToken
	}
	return &client{base: cfg.serverURL(), token: token, http: &http.Client{}}
}

// noServerError says no server answers at the CLI's address.
type noServerError struct{ base string }

func (e *noServerError) Error() string {
	return fmt.Sprintf("no AdaptBot server answers at %s (ADAPTBOT_ADDR); changes go through the server, so start it first with `adaptbot serve` (same ADAPTBOT_HOME and ADAPTBOT_ADDR), then run this again", e.base)
}

// serverError is the server's answer to a request it refused: its status
// and its "error" message.
type serverError struct {
	Status int
	Msg    string
}

func (e *serverError) Error() string { return e.Msg }

// request sends body (JSON unless it is []byte, sent as it is) and returns
// the response, or an error that says how to start the server when none
// answers.
func (c *client) request(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	req.Header.Set(clientHeader, "cli") // the rows of its requests say door cli
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || isNoHost(err) {
			return nil, &noServerError{base: c.base}
		}
		return nil, err
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(raw))
		}
		return nil, &serverError{Status: resp.StatusCode, Msg: e.Error}
	}
	return resp, nil
}

func isNoHost(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "connection refused")
}

// call sends a request and decodes the JSON answer into out.
func (c *client) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.request(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// build runs a build on the server, reporting each progress event to
// progress, and returns its result. The server streams the build as
// Server-Sent Events (POST /api/tools/build).
func (c *client) build(ctx context.Context, req generator.Request, progress func(generator.Event)) (*generator.Result, error) {
	return c.stream(ctx, "/api/tools/build", req, progress)
}

// stream posts body to path, which answers a build's progress as
// Server-Sent Events (a build, a repair), and returns its result.
func (c *client) stream(ctx context.Context, path string, body any, progress func(generator.Event)) (*generator.Result, error) {
	resp, err := c.request(ctx, http.MethodPost, path, body, "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res *generator.Result
	err = readEvents(resp.Body, func(event string, data []byte) error {
		switch event {
		case "progress":
			var ev generator.Event
			if err := json.Unmarshal(data, &ev); err == nil && progress != nil {
				progress(ev)
			}
		case "result":
			res = new(generator.Result)
			return json.Unmarshal(data, res)
		case "error":
			var e struct {
				Error string `json:"error"`
			}
			json.Unmarshal(data, &e)
			return errors.New(e.Error)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("the server ended the build without a result")
	}
	return res, nil
}

// readEvents calls fn for each Server-Sent Event in r.
func readEvents(r io.Reader, fn func(event string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	event, data := "message", []byte(nil)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				if err := fn(event, data); err != nil {
					return err
				}
			}
			event, data = "message", nil
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	return sc.Err()
}

// progressLine shows a build's progress: on one line, rewritten in place,
// on a terminal; one line per event anywhere else (a log, a pipe, CI).
type progressLine struct {
	w     io.Writer
	tty   bool
	width int
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w, tty: isTerminal(w)} }

func (p *progressLine) show(ev generator.Event) {
	line := fmt.Sprintf("[%s] %s", ev.Stage, ev.Message)
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	pad := ""
	if n := p.width - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

func (p *progressLine) done() {
	if p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether v is a terminal (a character device).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
