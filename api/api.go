// Package api is AdaptBot's HTTP API as its clients see it: a Client that
// asks the running server (JSON answers, and builds and repairs streamed as
// Server-Sent Events), the bodies the server takes, and the header that
// names the program asking. The command line (package cli) is its client;
// the server's edge (app) decodes the same bodies, as ollama's server and
// CLI share its api package.
//
// It only sends requests: it reads no configuration, and opens no file.
package api

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
	"strings"
	"syscall"

	"adaptbot/generator"
	"adaptbot/identity"
)

// ClientHeader names the program that sends a request; the command line
// sends "cli", so the server's rows of its requests say door cli.
const ClientHeader = "X-AdaptBot-Client"

// Client is the CLI's side of the one-writer rule: commands that change
// tools (create, modify, delete, rollback, run, approve) or users ask the
// running server over its HTTP API, with the caller's key when one is
// set, so the server alone writes tools/, the registry, the users and the
// CSV, and serves the change at once.
type Client struct {
	base  string // http://host:port
	token string
	http  *http.Client
}

// New is a client of the server at base (http://host:port) that sends
// token, when set, as Authorization: Bearer.
func New(base, token string) *Client {
	return &Client{base: base, token: token, http: &http.Client{}}
}

// NoServerError says no server answers at the client's address.
type NoServerError struct{ Base string }

func (e *NoServerError) Error() string {
	return fmt.Sprintf("no AdaptBot server answers at %s (ADAPTBOT_ADDR); changes go through the server, so start it first with `adaptbot serve` (same ADAPTBOT_HOME and ADAPTBOT_ADDR), then run this again", e.Base)
}

// ServerError is the server's answer to a request it refused: its status
// and its "error" message.
type ServerError struct {
	Status int
	Msg    string
}

func (e *ServerError) Error() string { return e.Msg }

// request sends body (JSON unless it is []byte, sent as it is) and returns
// the response, or an error that says how to start the server when none
// answers.
func (c *Client) request(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
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
	req.Header.Set(ClientHeader, "cli") // the rows of its requests say door cli
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || isNoHost(err) {
			return nil, &NoServerError{Base: c.base}
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
		return nil, &ServerError{Status: resp.StatusCode, Msg: e.Error}
	}
	return resp, nil
}

func isNoHost(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "connection refused")
}

// Call sends a request to path, with body as JSON unless it is []byte
// (sent as it is), and decodes the JSON answer into out.
func (c *Client) Call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.request(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// Build runs a build on the server, reporting each progress event to
// progress, and returns its result. The server streams the build as
// Server-Sent Events (POST /api/tools/build).
func (c *Client) Build(ctx context.Context, req generator.Request, progress func(generator.Event)) (*generator.Result, error) {
	return c.Stream(ctx, "/api/tools/build", req, progress)
}

// Stream posts body to path, which answers a build's progress as
// Server-Sent Events (a build, a repair), and returns its result.
func (c *Client) Stream(ctx context.Context, path string, body any, progress func(generator.Event)) (*generator.Result, error) {
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

// ImportRequest is the body of POST /api/tools/import.
type ImportRequest struct {
	// Bundle is the .tar.gz, base64-encoded (JSON carries no bytes).
	Bundle string            `json:"bundle"`
	Rename map[string]string `json:"rename,omitempty"`
	// Replace lets the bundle's tools become the next versions of tools
	// of the same names.
	Replace bool `json:"replace,omitempty"`
}

// UserRequest is the body of POST /api/users and PATCH /api/users/NAME.
type UserRequest struct {
	Name string        `json:"name"`
	Role identity.Role `json:"role"`
}
