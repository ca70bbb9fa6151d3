package web

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/reqid"
)

// fakeService stands in for the service: the edge's tests check what the
// edge does (decode, who asks, refuse, encode) without a registry, a
// sandbox or files, and compile no engine. Methods a test does not set
// panic through the nil embedded interface, so a handler that asks for
// more than it should fails loudly.
type fakeService struct {
	Service
	mu      sync.Mutex
	runs    []fakeRun
	refused []adaptbot.Refused
	runErr  error
}

var _ Service = (*fakeService)(nil)

type fakeRun struct {
	who  identity.Identity
	name string
	args string
	id   string // the request ID in its context
}

func (f *fakeService) Run(ctx context.Context, name string, args json.RawMessage) (*adaptbot.RunResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, fakeRun{who: identity.From(ctx), name: name, args: string(args), id: reqid.From(ctx)})
	if f.runErr != nil {
		return nil, f.runErr
	}
	return &adaptbot.RunResult{Tool: name, Output: "ran " + name, RequestID: "r-1"}, nil
}

func (f *fakeService) Refuse(ctx context.Context, r adaptbot.Refused) *adaptbot.Error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused = append(f.refused, r)
	e, _ := r.Err.(*adaptbot.Error)
	if e == nil {
		e = &adaptbot.Error{Kind: adaptbot.KindOf(r.Err), Msg: r.Err.Error()}
	}
	// As the service does: the refusal's row has the request's ID, or
	// its own when the edge refused before it fixed one.
	e2 := *e
	if e2.RequestID = reqid.From(ctx); e2.RequestID == "" {
		e2.RequestID = "refused-1"
	}
	return &e2
}

func (f *fakeService) ModelStatus() adaptbot.ModelStatus { return adaptbot.ModelStatus{} }
func (f *fakeService) ModelName() string                 { return "" }

// fakeEdge is the edge over a fake service, on loopback with its limits
// as o says.
func fakeEdge(t *testing.T, f *fakeService, o Options) *edge {
	t.Helper()
	o.Addr, o.Loopback, o.MCP = "127.0.0.1:0", true, http.NotFoundHandler()
	a, _ := openAuth(t, authSetup{loopback: true})
	s := NewServer(f, a, nil, o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return &edge{s, "http://" + ln.Addr().String()}
}

// edge is a server listening on loopback.
type edge struct {
	*Server
	url string
}

func post(t *testing.T, s *edge, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestRunGoesThroughTheService: a direct run is decoded at the edge and
// carried out by the service, with the caller's identity in its context;
// the service's error kinds become statuses.
func TestRunGoesThroughTheService(t *testing.T) {
	f := &fakeService{}
	s := fakeEdge(t, f, Options{})
	code, body := post(t, s, "/api/tools/calculator/run", `{"expression":"1+1"}`)
	if code != 200 || !strings.Contains(body, `"output":"ran calculator"`) {
		t.Fatalf("run = %d %s", code, body)
	}
	if len(f.runs) != 1 || f.runs[0].name != "calculator" || f.runs[0].args != `{"expression":"1+1"}` || f.runs[0].who.Name != identity.Local.Name {
		t.Errorf("the service got %+v", f.runs)
	}
	f.runErr = adaptbot.Errorf(adaptbot.NotFound, "no tool named %q", "calculator")
	if code, body := post(t, s, "/api/tools/calculator/run", `{}`); code != 404 || !strings.Contains(body, "no tool named") {
		t.Errorf("a run the service finds nothing for = %d %s", code, body)
	}
}

// TestAnswersNameTheirRequest: every answer carries its request's ID in
// X-Request-Id, the one the operation stamps its row and trace with, so a
// client finds them whatever the answer's body holds.
func TestAnswersNameTheirRequest(t *testing.T) {
	f := &fakeService{}
	s := fakeEdge(t, f, Options{})
	resp, err := http.Post(s.url+"/api/tools/calculator/run", "application/json", strings.NewReader(`{"expression":"1+1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get(RequestIDHeader)
	if resp.StatusCode != 200 || len(f.runs) != 1 || id == "" || f.runs[0].id != id {
		t.Errorf("run = %d, header %q, the operation's ID %+v", resp.StatusCode, id, f.runs)
	}
	// A refusal before any operation names the refusal's row.
	resp, err = http.Post(s.url+"/api/tools/calculator/run", "application/json", strings.NewReader(`{"expression":"`+strings.Repeat("1+", 1<<20)+`1"}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var body map[string]any
	json.Unmarshal(raw, &body) //nolint:errcheck
	if id := resp.Header.Get(RequestIDHeader); resp.StatusCode != 413 || id == "" || body["request_id"] != id {
		t.Errorf("refusal = %d, header %q, body %s", resp.StatusCode, id, raw)
	}
}

// TestEdgeRefusalsAreTheServicesRows: a request the edge turns away before
// any operation (a body over the limit, a bad body) is written by the
// service as one refused row, naming the operation it asked for; the
// operation itself never runs.
func TestEdgeRefusalsAreTheServicesRows(t *testing.T) {
	f := &fakeService{}
	s := fakeEdge(t, f, Options{})
	code, _ := post(t, s, "/api/tools/calculator/run", `{"expression":"`+strings.Repeat("1+", 1<<20)+`1"}`)
	if code != 413 {
		t.Fatalf("an oversized run = %d, want 413", code)
	}
	if len(f.runs) != 0 || len(f.refused) != 1 || f.refused[0].Tool != "calculator" || adaptbot.KindOf(f.refused[0].Err) != adaptbot.Invalid {
		t.Errorf("runs %+v, refused %+v", f.runs, f.refused)
	}
	// The same over /mcp, where the message (a tools/call) is not read.
	if code, _ := post(t, s, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"`+strings.Repeat("1+", 1<<20)+`1"}}}`); code != 413 {
		t.Fatalf("an oversized MCP message = %d, want 413", code)
	}
	if len(f.refused) != 2 || f.refused[1].Intent != "RUN" {
		t.Errorf("refused %+v", f.refused)
	}
}
