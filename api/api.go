// Package api is AdaptBot's HTTP API as its clients see it: a Client with
// one typed method per endpoint it uses (JSON answers, and builds and
// repairs streamed as Server-Sent Events), every body those endpoints take
// and answer (types.go), and the header that names the program asking. The
// command line (package cli) is its client; the server's edge (app)
// answers in the same shapes, as ollama's server and CLI share its api
// package.
//
// It imports only the standard library, so a client of AdaptBot links no
// engine: no sandbox, no interpreter, no model client. It only sends
// requests: it reads no configuration, and opens no file.
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
	"strconv"
	"strings"
	"syscall"
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
	// Kind is the error's kind, when the server named one ("not_found").
	Kind string
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
		var e ErrorBody
		if json.Unmarshal(raw, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(raw))
		}
		return nil, &ServerError{Status: resp.StatusCode, Msg: e.Error, Kind: e.Kind}
	}
	return resp, nil
}

func isNoHost(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "connection refused")
}

// call sends a request to path, with body as JSON unless it is []byte
// (sent as it is), and decodes the JSON answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.request(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// toolPath is the path of the tool name's endpoint, with more after it
// ("/run", "/failures").
func toolPath(name, more string) string { return "/api/tools/" + url.PathEscape(name) + more }

// userPath is the path of the user name's endpoint, with more after it.
func userPath(name, more string) string { return "/api/users/" + url.PathEscape(name) + more }

// answer calls the endpoint and returns its decoded answer.
func answer[T any](ctx context.Context, c *Client, method, path string, body any) (*T, error) {
	out := new(T)
	if err := c.call(ctx, method, path, body, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Tool is GET /api/tools/NAME: the tool's entry, source and examples.
func (c *Client) Tool(ctx context.Context, name string) (*Tool, error) {
	return answer[Tool](ctx, c, http.MethodGet, toolPath(name, ""), nil)
}

// Versions is GET /api/tools/NAME/versions: the tool's kept versions.
func (c *Client) Versions(ctx context.Context, name string) (*VersionList, error) {
	return answer[VersionList](ctx, c, http.MethodGet, toolPath(name, "/versions"), nil)
}

// Run is POST /api/tools/NAME/run: the tool run with args, a JSON object
// sent as it is ({} when empty).
func (c *Client) Run(ctx context.Context, name string, args RunRequest) (*RunResult, error) {
	if len(args) == 0 {
		args = RunRequest("{}")
	}
	return answer[RunResult](ctx, c, http.MethodPost, toolPath(name, "/run"), []byte(args))
}

// Test is POST /api/tools/NAME/test: the tool's stored examples run again
// on the server.
func (c *Client) Test(ctx context.Context, name string) (*ExampleReport, error) {
	return answer[ExampleReport](ctx, c, http.MethodPost, toolPath(name, "/test"), nil)
}

// Delete is DELETE /api/tools/NAME; force deletes a tool other tools use.
func (c *Client) Delete(ctx context.Context, name string, force bool) (*BuildResult, error) {
	path := toolPath(name, "")
	if force {
		path += "?force=" + strconv.FormatBool(force)
	}
	return answer[BuildResult](ctx, c, http.MethodDelete, path, nil)
}

// Rollback is POST /api/tools/NAME/rollback: version serves again, as a
// new version.
func (c *Client) Rollback(ctx context.Context, name string, version int) (*RollbackResult, error) {
	return answer[RollbackResult](ctx, c, http.MethodPost, toolPath(name, "/rollback"), RollbackRequest{Version: version})
}

// Approve is POST /api/tools/NAME/approve: the version waiting for review
// serves.
func (c *Client) Approve(ctx context.Context, name string) (*ApproveResult, error) {
	return answer[ApproveResult](ctx, c, http.MethodPost, toolPath(name, "/approve"), nil)
}

// Failures is GET /api/tools/NAME/failures: the tool's failure cases and
// repairs.
func (c *Client) Failures(ctx context.Context, name string) (*FailureReport, error) {
	return answer[FailureReport](ctx, c, http.MethodGet, toolPath(name, "/failures"), nil)
}

// Import is POST /api/tools/import: a bundle's tools brought in.
func (c *Client) Import(ctx context.Context, req ImportRequest) (*ImportResult, error) {
	return answer[ImportResult](ctx, c, http.MethodPost, "/api/tools/import", req)
}

// Users is GET /api/users.
func (c *Client) Users(ctx context.Context) (*UserList, error) {
	return answer[UserList](ctx, c, http.MethodGet, "/api/users", nil)
}

// AddUser is POST /api/users: the user added, with their key.
func (c *Client) AddUser(ctx context.Context, req UserRequest) (*UserResult, error) {
	return answer[UserResult](ctx, c, http.MethodPost, "/api/users", req)
}

// SetRole is PATCH /api/users/NAME.
func (c *Client) SetRole(ctx context.Context, name string, role Role) (*UserResult, error) {
	return answer[UserResult](ctx, c, http.MethodPatch, userPath(name, ""), UserRequest{Role: role})
}

// RotateKey is POST /api/users/NAME/rotate: a new key; the old one stops
// working.
func (c *Client) RotateKey(ctx context.Context, name string) (*UserResult, error) {
	return answer[UserResult](ctx, c, http.MethodPost, userPath(name, "/rotate"), nil)
}

// RemoveUser is DELETE /api/users/NAME.
func (c *Client) RemoveUser(ctx context.Context, name string) (*UserResult, error) {
	return answer[UserResult](ctx, c, http.MethodDelete, userPath(name, ""), nil)
}

// Build runs a build on the server, reporting each progress event to
// progress, and returns its result. The server streams the build as
// Server-Sent Events (POST /api/tools/build).
func (c *Client) Build(ctx context.Context, req BuildRequest, progress func(Event)) (*BuildResult, error) {
	return c.stream(ctx, "/api/tools/build", req, progress)
}

// Repair rewrites a tool from its failure cases on the server, streamed as
// a build is (POST /api/tools/NAME/repair).
func (c *Client) Repair(ctx context.Context, name string, req RepairRequest, progress func(Event)) (*BuildResult, error) {
	return c.stream(ctx, toolPath(name, "/repair"), req, progress)
}

// stream posts body to path, which answers a build's progress as
// Server-Sent Events (a build, a repair), and returns its result.
func (c *Client) stream(ctx context.Context, path string, body any, progress func(Event)) (*BuildResult, error) {
	resp, err := c.request(ctx, http.MethodPost, path, body, "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res *BuildResult
	err = readEvents(resp.Body, func(event string, data []byte) error {
		switch event {
		case "progress":
			var ev Event
			if err := json.Unmarshal(data, &ev); err == nil && progress != nil {
				progress(ev)
			}
		case "result":
			res = new(BuildResult)
			return json.Unmarshal(data, res)
		case "error":
			var e ErrorBody
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

// Sessions lists the browser sign-ins of the user name (GET
// /api/users/NAME/sessions; admin only).
func (c *Client) Sessions(ctx context.Context, name string) ([]Session, error) {
	out, err := answer[SessionList](ctx, c, http.MethodGet, userPath(name, "/sessions"), nil)
	if err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

// EndSessions ends one browser sign-in of the user name, or with id "all"
// every one, and says how many ended (DELETE /api/users/NAME/sessions[/ID]).
func (c *Client) EndSessions(ctx context.Context, name, id string) (int, error) {
	path := userPath(name, "/sessions")
	if id != "all" {
		path += "/" + url.PathEscape(id)
	}
	out, err := answer[SessionsEnded](ctx, c, http.MethodDelete, path, nil)
	if err != nil {
		return 0, err
	}
	return out.Ended, nil
}
