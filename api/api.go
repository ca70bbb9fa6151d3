// Package api is AdaptBot's HTTP API as its clients see it: a Client that
// implements the root's operations (adaptbot.ToolService, BuildService,
// LearningService, UserService, RequestService, SecretService,
// ApprovalService and TrustService) over HTTP, one method
// per endpoint (JSON answers, and builds and repairs streamed as
// Server-Sent Events). The bodies are the root's types, which the server
// answers with, so nothing is copied and no field is lost. The command
// line (package cli) is its client; when no server runs, it asks the same
// interfaces of a service of its own over the files, which it only reads.
//
// It imports only the standard library and the root, so a client of
// AdaptBot links no engine: no sandbox, no interpreter, no model client. It
// only sends requests: it reads no configuration, and opens no file.
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

	"adaptbot"
)

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
	req.Header.Set(adaptbot.ClientHeader, "cli") // the rows of its requests say door cli
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

// The operations the client carries out on the server.
var (
	_ adaptbot.ToolService     = (*Client)(nil)
	_ adaptbot.BuildService    = (*Client)(nil)
	_ adaptbot.LearningService = (*Client)(nil)
	_ adaptbot.UserService     = (*Client)(nil)
	_ adaptbot.RequestService  = (*Client)(nil)
	_ adaptbot.SecretService   = (*Client)(nil)
	_ adaptbot.ApprovalService = (*Client)(nil)
	_ adaptbot.TrustService    = (*Client)(nil)
)

// Tools is GET /api/tools: every local tool, serving or not.
func (c *Client) Tools(ctx context.Context) (*adaptbot.ToolList, error) {
	return answer[adaptbot.ToolList](ctx, c, http.MethodGet, "/api/tools", nil)
}

// Tool is GET /api/tools/NAME: the tool's entry, source and examples.
func (c *Client) Tool(ctx context.Context, name string) (*adaptbot.ToolInfo, error) {
	return answer[adaptbot.ToolInfo](ctx, c, http.MethodGet, toolPath(name, ""), nil)
}

// Versions is GET /api/tools/NAME/versions: the tool's kept versions.
func (c *Client) Versions(ctx context.Context, name string) (*adaptbot.VersionList, error) {
	return answer[adaptbot.VersionList](ctx, c, http.MethodGet, toolPath(name, "/versions"), nil)
}

// Diff is GET /api/tools/NAME/diff: two kept versions compared (0 is the
// server's default: the newest, and the one before it).
func (c *Client) Diff(ctx context.Context, name string, from, to int) (*adaptbot.Diff, error) {
	q := url.Values{}
	if from > 0 {
		q.Set("from", strconv.Itoa(from))
	}
	if to > 0 {
		q.Set("to", strconv.Itoa(to))
	}
	path := toolPath(name, "/diff")
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return answer[adaptbot.Diff](ctx, c, http.MethodGet, path, nil)
}

// Run is POST /api/tools/NAME/run: the tool run with args, a JSON object
// sent as it is ({} when empty). With an Asker in ctx
// (adaptbot.WithAsker), the run is streamed, and each approval a request
// of the tool's waits for is asked of it, its answer sent back (POST
// /api/approvals/ID); without one, such a request is refused, with words
// that say so.
func (c *Client) Run(ctx context.Context, name string, args json.RawMessage) (*adaptbot.RunResult, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if a := adaptbot.AskerFrom(ctx); a != nil {
		return c.runAsking(ctx, name, args, a)
	}
	return answer[adaptbot.RunResult](ctx, c, http.MethodPost, toolPath(name, "/run"), []byte(args))
}

// runAsking is Run streamed: the server sends an "approval" event for each
// request that waits, which a asks of its person before the client
// answers it, then one "result" or "error" event. An error of a's ends
// the run (the server gives the request up: nothing is sent).
func (c *Client) runAsking(ctx context.Context, name string, args json.RawMessage, a adaptbot.Asker) (*adaptbot.RunResult, error) {
	resp, err := c.request(ctx, http.MethodPost, toolPath(name, "/run"), []byte(args), "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readResult[adaptbot.RunResult](resp.Body, "run", func(event string, data []byte) error {
		switch event {
		case "approval":
			var ap adaptbot.Approval
			if err := json.Unmarshal(data, &ap); err != nil {
				return fmt.Errorf("the server asked for an approval the client cannot read: %w", err)
			}
			actx, cancel := context.WithDeadline(ctx, ap.Expires)
			ans, err := a.Ask(actx, ap)
			cancel()
			if err != nil {
				return err
			}
			// An answer too late (410) or twice (409) is the server's to
			// settle: the run's own result says what became of it.
			if _, err := c.AnswerApproval(ctx, ap.ID, ans); err != nil {
				if se, ok := errors.AsType[*ServerError](err); !ok || (se.Status != http.StatusGone && se.Status != http.StatusConflict) {
					return err
				}
			}
		}
		return nil
	})
}

// Test is POST /api/tools/NAME/test: the tool's stored examples run again
// on the server.
func (c *Client) Test(ctx context.Context, name string) (*adaptbot.ExampleReport, error) {
	return answer[adaptbot.ExampleReport](ctx, c, http.MethodPost, toolPath(name, "/test"), nil)
}

// Delete is DELETE /api/tools/NAME; force deletes a tool other tools use.
func (c *Client) Delete(ctx context.Context, name string, force bool) (*adaptbot.BuildResult, error) {
	path := toolPath(name, "")
	if force {
		path += "?force=" + strconv.FormatBool(force)
	}
	return answer[adaptbot.BuildResult](ctx, c, http.MethodDelete, path, nil)
}

// Rollback is POST /api/tools/NAME/rollback: a version serves again, as a
// new version.
func (c *Client) Rollback(ctx context.Context, name string, req adaptbot.RollbackRequest) (*adaptbot.RollbackResult, error) {
	return answer[adaptbot.RollbackResult](ctx, c, http.MethodPost, toolPath(name, "/rollback"), req)
}

// Approve is POST /api/tools/NAME/approve: the version waiting for review
// serves.
func (c *Client) Approve(ctx context.Context, name string) (*adaptbot.ApproveResult, error) {
	return answer[adaptbot.ApproveResult](ctx, c, http.MethodPost, toolPath(name, "/approve"), nil)
}

// Plan is POST /api/tools/plan: what a build would make, before it starts.
func (c *Client) Plan(ctx context.Context, req adaptbot.PlanRequest) (*adaptbot.Plan, error) {
	return answer[adaptbot.Plan](ctx, c, http.MethodPost, "/api/tools/plan", req)
}

// Import is POST /api/tools/import: a bundle's tools brought in.
func (c *Client) Import(ctx context.Context, req adaptbot.ImportRequest) (*adaptbot.ImportResult, error) {
	return answer[adaptbot.ImportResult](ctx, c, http.MethodPost, "/api/tools/import", req)
}

// Failures is GET /api/tools/NAME/failures: the tool's failure cases and
// repairs.
func (c *Client) Failures(ctx context.Context, name string) (*adaptbot.FailureReport, error) {
	return answer[adaptbot.FailureReport](ctx, c, http.MethodGet, toolPath(name, "/failures"), nil)
}

// FailureSummary is GET /api/failures: every tool's failure cases counted.
func (c *Client) FailureSummary(ctx context.Context) (*adaptbot.FailureSummary, error) {
	return answer[adaptbot.FailureSummary](ctx, c, http.MethodGet, "/api/failures", nil)
}

// ConfirmCase is POST /api/tools/NAME/failures/ID/confirm.
func (c *Client) ConfirmCase(ctx context.Context, name, id string) (*adaptbot.FailureReport, error) {
	return answer[adaptbot.FailureReport](ctx, c, http.MethodPost, toolPath(name, "/failures/"+url.PathEscape(id)+"/confirm"), nil)
}

// DismissCase is DELETE /api/tools/NAME/failures/ID.
func (c *Client) DismissCase(ctx context.Context, name, id string) (*adaptbot.FailureReport, error) {
	return answer[adaptbot.FailureReport](ctx, c, http.MethodDelete, toolPath(name, "/failures/"+url.PathEscape(id)), nil)
}

// Skills is GET /api/skills: the chains of tools seen in chats.
func (c *Client) Skills(ctx context.Context) (*adaptbot.SkillList, error) {
	return answer[adaptbot.SkillList](ctx, c, http.MethodGet, "/api/skills", nil)
}

// Requests is GET /api/requests: the newest stored requests the caller may
// read.
func (c *Client) Requests(ctx context.Context, limit int) (*adaptbot.RequestList, error) {
	return answer[adaptbot.RequestList](ctx, c, http.MethodGet, "/api/requests?limit="+strconv.Itoa(limit), nil)
}

// Request is GET /api/requests/ID: one stored request.
func (c *Client) Request(ctx context.Context, id string) (*adaptbot.Trace, error) {
	return answer[adaptbot.Trace](ctx, c, http.MethodGet, "/api/requests/"+url.PathEscape(id), nil)
}

// Secrets is GET /api/secrets: the caller's secrets and the shared ones,
// never a value.
func (c *Client) Secrets(ctx context.Context) (*adaptbot.SecretList, error) {
	return answer[adaptbot.SecretList](ctx, c, http.MethodGet, "/api/secrets", nil)
}

// SetSecret is PUT /api/secrets/NAME.
func (c *Client) SetSecret(ctx context.Context, name string, req adaptbot.SecretRequest) (*adaptbot.Secret, error) {
	return answer[adaptbot.Secret](ctx, c, http.MethodPut, "/api/secrets/"+url.PathEscape(name), req)
}

// DeleteSecret is DELETE /api/secrets/NAME (?shared=true for the team's).
func (c *Client) DeleteSecret(ctx context.Context, name string, shared bool) (*adaptbot.Secret, error) {
	path := "/api/secrets/" + url.PathEscape(name)
	if shared {
		path += "?shared=true"
	}
	return answer[adaptbot.Secret](ctx, c, http.MethodDelete, path, nil)
}

// Approvals is GET /api/approvals: what waits for the caller's answer.
func (c *Client) Approvals(ctx context.Context) (*adaptbot.ApprovalList, error) {
	return answer[adaptbot.ApprovalList](ctx, c, http.MethodGet, "/api/approvals", nil)
}

// AnswerApproval is POST /api/approvals/ID.
func (c *Client) AnswerApproval(ctx context.Context, id string, a adaptbot.ApprovalAnswer) (*adaptbot.ApprovalRecord, error) {
	return answer[adaptbot.ApprovalRecord](ctx, c, http.MethodPost, "/api/approvals/"+url.PathEscape(id), a)
}

// TrustTool is POST /api/tools/NAME/trust (admins).
func (c *Client) TrustTool(ctx context.Context, tool string, req adaptbot.TrustRequest) (*adaptbot.TrustList, error) {
	return answer[adaptbot.TrustList](ctx, c, http.MethodPost, toolPath(tool, "/trust"), req)
}

// UntrustTool is DELETE /api/tools/NAME/trust?host=HOST (admins).
func (c *Client) UntrustTool(ctx context.Context, tool, host string) (*adaptbot.TrustList, error) {
	return answer[adaptbot.TrustList](ctx, c, http.MethodDelete, toolPath(tool, "/trust")+"?host="+url.QueryEscape(host), nil)
}

// Users is GET /api/users.
func (c *Client) Users(ctx context.Context) (*adaptbot.UserList, error) {
	return answer[adaptbot.UserList](ctx, c, http.MethodGet, "/api/users", nil)
}

// AddUser is POST /api/users: the user added, with their key.
func (c *Client) AddUser(ctx context.Context, req adaptbot.UserRequest) (*adaptbot.UserResult, error) {
	return answer[adaptbot.UserResult](ctx, c, http.MethodPost, "/api/users", req)
}

// SetRole is PATCH /api/users/NAME.
func (c *Client) SetRole(ctx context.Context, name string, role adaptbot.Role) (*adaptbot.UserResult, error) {
	return answer[adaptbot.UserResult](ctx, c, http.MethodPatch, userPath(name, ""), adaptbot.UserRequest{Role: role})
}

// RotateKey is POST /api/users/NAME/rotate: a new key; the old one stops
// working.
func (c *Client) RotateKey(ctx context.Context, name string) (*adaptbot.UserResult, error) {
	return answer[adaptbot.UserResult](ctx, c, http.MethodPost, userPath(name, "/rotate"), nil)
}

// RemoveUser is DELETE /api/users/NAME.
func (c *Client) RemoveUser(ctx context.Context, name string) (*adaptbot.UserResult, error) {
	return answer[adaptbot.UserResult](ctx, c, http.MethodDelete, userPath(name, ""), nil)
}

// Sessions is GET /api/users/NAME/sessions: the user's browser sign-ins
// (admin only).
func (c *Client) Sessions(ctx context.Context, name string) (*adaptbot.SessionList, error) {
	return answer[adaptbot.SessionList](ctx, c, http.MethodGet, userPath(name, "/sessions"), nil)
}

// EndSessions ends one browser sign-in of the user name, or with id ""
// every one, and says how many ended (DELETE /api/users/NAME/sessions[/ID]).
func (c *Client) EndSessions(ctx context.Context, name, id string) (*adaptbot.SessionsEnded, error) {
	path := userPath(name, "/sessions")
	if id != "" {
		path += "/" + url.PathEscape(id)
	}
	return answer[adaptbot.SessionsEnded](ctx, c, http.MethodDelete, path, nil)
}

// Build runs a build on the server, telling s each progress event, and
// returns its result. The server streams the build as Server-Sent Events
// (POST /api/tools/build).
func (c *Client) Build(ctx context.Context, req adaptbot.BuildRequest, s adaptbot.Stream) (*adaptbot.BuildResult, error) {
	return c.stream(ctx, "/api/tools/build", req, s.Progress)
}

// PrepareBuild is Build, to run against a stream: the server refuses what
// it refuses at once when the stream is asked for, so Run may return it.
func (c *Client) PrepareBuild(ctx context.Context, req adaptbot.BuildRequest) (adaptbot.Prepared[*adaptbot.BuildResult], error) {
	return later[*adaptbot.BuildResult](func(ctx context.Context, s adaptbot.Stream) (*adaptbot.BuildResult, error) {
		return c.Build(ctx, req, s)
	}), nil
}

// Repair rewrites a tool from its failure cases on the server, streamed as
// a build is (POST /api/tools/NAME/repair).
func (c *Client) Repair(ctx context.Context, name string, req adaptbot.RepairRequest, s adaptbot.Stream) (*adaptbot.BuildResult, error) {
	return c.stream(ctx, toolPath(name, "/repair"), req, s.Progress)
}

// PrepareRepair is Repair, to run against a stream (see PrepareBuild).
func (c *Client) PrepareRepair(ctx context.Context, name string, req adaptbot.RepairRequest) (adaptbot.Prepared[*adaptbot.BuildResult], error) {
	return later[*adaptbot.BuildResult](func(ctx context.Context, s adaptbot.Stream) (*adaptbot.BuildResult, error) {
		return c.Repair(ctx, name, req, s)
	}), nil
}

// later is an operation the server begins when it is run.
type later[T any] func(ctx context.Context, s adaptbot.Stream) (T, error)

// Run sends the request.
func (l later[T]) Run(ctx context.Context, s adaptbot.Stream) (T, error) { return l(ctx, s) }

// stream posts body to path, which answers a build's progress as
// Server-Sent Events (a build, a repair), and returns its result.
func (c *Client) stream(ctx context.Context, path string, body any, progress func(adaptbot.Event)) (*adaptbot.BuildResult, error) {
	resp, err := c.request(ctx, http.MethodPost, path, body, "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readResult[adaptbot.BuildResult](resp.Body, "build", func(event string, data []byte) error {
		if event == "progress" && progress != nil {
			var ev adaptbot.Event
			if json.Unmarshal(data, &ev) == nil {
				progress(ev)
			}
		}
		return nil
	})
}

// readResult reads a stream that ends in one "result" event (a T) or one
// "error" event, handing every other event to on. what names the
// operation, for a stream that ends with neither.
func readResult[T any](r io.Reader, what string, on func(event string, data []byte) error) (*T, error) {
	var res *T
	err := readEvents(r, func(event string, data []byte) error {
		switch event {
		case "result":
			res = new(T)
			return json.Unmarshal(data, res)
		case "error":
			var e ErrorBody
			json.Unmarshal(data, &e) //nolint:errcheck // an unreadable error event still ends the stream as one
			return &ServerError{Status: e.Status, Msg: e.Error, Kind: e.Kind}
		}
		return on(event, data)
	})
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("the server ended the %s without a result", what)
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

// ErrorBody is the answer of a refused request, and the data of a
// stream's "error" event: what went wrong in words, and its kind (not
// found, conflict, invalid, forbidden, unavailable, timeout, upstream)
// when the service named one. Some refusals carry more fields (a tool's
// schema beside invalid arguments); a client reads them from the raw
// answer.
type ErrorBody struct {
	Error     string `json:"error"`
	Kind      string `json:"error_kind,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// RetryAfter is in seconds, when trying again later may succeed.
	RetryAfter int `json:"retry_after,omitempty"`
	// Status is an event stream's error's status.
	Status int `json:"status,omitempty"`
}
