//go:build chaos

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"adaptbot/llm/llmtest"
	"adaptbot/toolbox"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// deadline is a request's limit at the client: far past any of the
// server's own (a chat's is well under a minute with the scripted model),
// so a request still unanswered then hangs.
const deadline = 90 * time.Second

// The phases of a round, for the latencies: before the fault, during it,
// after it heals.
const (
	before = iota
	during
	after
)

// outcome is one request as its client saw it.
type outcome struct {
	replica    int
	kind       string
	phase      int
	status     int    // 0: no answer (the connection died, or the deadline)
	id         string // X-Request-Id, or the body's request_id
	bodyID     bool   // an error body named its request
	retryAfter bool
	hang       bool
	err        string
	began      time.Time
	latency    time.Duration
	ok         bool   // a build's result said ok
	token      string // an acting call's, as the witness counts it
}

// answered is a 200, with a build's result in it.
func (o *outcome) answered() bool {
	return o.status == 200 && (!strings.HasPrefix(o.kind, "change") || o.ok)
}

// model answers as a model that routes by the message's words, scripted for
// what the load sends: "compute A+B" calls the calculator, a build writes
// the tool and version its request names, anything else is a greeting.
func model(r llmtest.Request) llmtest.Reply {
	msg := ""
	for _, m := range r.Messages {
		if m.Role == "user" {
			msg = m.Text()
			break
		}
	}
	res := r.Results()
	switch {
	case r.Forced() == "" && r.Last().Role == "tool" && len(res) > 0 && res[len(res)-1].Name != "request_tools":
		return llmtest.Say("Here you go: " + strings.TrimSpace(res[len(res)-1].Text))
	case r.Forced() == "write_tool":
		all := ""
		for _, m := range r.Messages {
			all += m.Text() + "\n"
		}
		m := buildWords.FindStringSubmatch(all)
		if m == nil {
			return llmtest.Say("I cannot tell which tool to write")
		}
		k, _ := strconv.Atoi(m[2])
		args, _ := json.Marshal(map[string]any{
			"source": counterSource(m[1], "version "+m[2], k), "description": "Says which version of it serves.", "category": "text",
			"examples": []map[string]any{
				{"input": map[string]any{"n": 1}, "contains": fmt.Sprintf("v%d:1", k)},
				{"input": map[string]any{"n": 2}, "contains": fmt.Sprintf("v%d:2", k)},
			},
		})
		return llmtest.Call("write_tool", string(args))
	case r.Forced() != "":
		return llmtest.Say("ok")
	case r.Schema("need_tool") != nil:
		if m := computeWords.FindStringSubmatch(msg); m != nil {
			return llmtest.Call(toolbox.FunctionName("calculator"), fmt.Sprintf(`{"expression": %q}`, m[1]))
		}
		return llmtest.Say("Hello! I am the suite's scripted model.")
	}
	return llmtest.Say("ok")
}

var (
	buildWords   = regexp.MustCompile(`chaos build (\w+) version (\d+)`)
	computeWords = regexp.MustCompile(`compute ([0-9+*]+)`)
)

// counterSource is a tool that names its version: what the suite builds,
// modifies, rolls back and edits by hand. The digest of each version
// differs.
func counterSource(name, how string, k int) string {
	return fmt.Sprintf(`// Package %[1]s says which version of it serves (%[2]s): the fault
// suite's tool, built, modified, rolled back and edited under faults.
package %[1]s

import (
	"context"
	"fmt"
)

// Category is the tool's domain.
const Category = "text"

// Input is a number to echo.
type Input struct {
	N int `+"`json:\"n\" jsonschema:\"a number to echo\"`"+`
}

// Execute names the version and echoes in.N.
func Execute(ctx context.Context, in Input) (string, error) {
	return fmt.Sprintf("v%%d:%%d", %[3]d, in.N), nil
}
`, name, how, k)
}

// load sends requests to the replicas that are up, from a few clients at
// once, and keeps every outcome.
type load struct {
	h       *harness
	clients int
	stop    chan struct{}
	wg      sync.WaitGroup
	phase   atomic.Int32
	actMS   atomic.Int64 // how long an act call works
	n       atomic.Int64
	id      int64 // names this load's acting calls apart from any other's
	mu      sync.Mutex
	outs    []*outcome
	// onAnswer, when set, hears of each answer as it arrives, before the
	// client looks at it (a fault that kills the replica that answered).
	onAnswer atomic.Pointer[func(replica int, id string)]
}

func newLoad(h *harness, clients int) *load {
	l := &load{h: h, clients: clients, stop: make(chan struct{}), id: time.Now().UnixNano()}
	l.actMS.Store(200)
	return l
}

// start begins sending.
func (l *load) start() {
	for c := range l.clients {
		l.wg.Go(func() { l.client(c) })
	}
}

// finish stops sending and waits for the requests in flight.
func (l *load) finish() []*outcome {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.outs
}

func (l *load) client(c int) {
	rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		up := l.h.upReplicas()
		if len(up) == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		r := up[rng.IntN(len(up))]
		n := l.n.Add(1)
		var o *outcome
		switch p := rng.IntN(100); {
		case p < 45:
			o = l.post(r, "chat", "/chat", fmt.Sprintf(`{"message": "compute %d+%d please"}`, n, c))
		case p < 55:
			o = l.post(r, "chat", "/chat", `{"message": "hello there"}`)
		case p < 90:
			o = l.post(r, "run", "/api/tools/calculator/run", fmt.Sprintf(`{"expression": "%d*%d"}`, n, c+1))
		default:
			// Acting calls go to the replica whose calls run on the fleet.
			o = l.act(fmt.Sprintf("load-%d-%d", l.id, n))
		}
		l.keep(o)
		time.Sleep(time.Duration(10+rng.IntN(20)) * time.Millisecond)
	}
}

// act runs the acting tool on the fleet replica, named by token.
func (l *load) act(token string) *outcome {
	body := fmt.Sprintf(`{"url": %q, "token": %q, "ms": %d}`, l.h.witness.url, token, l.actMS.Load())
	o := l.post(fleetReplica, "act", "/api/tools/chaos_act/run", body)
	o.token = token
	return o
}

func (l *load) keep(o *outcome) {
	if o == nil {
		return
	}
	l.mu.Lock()
	l.outs = append(l.outs, o)
	l.mu.Unlock()
}

// post sends a JSON request to replica r and reads the answer.
func (l *load) post(r int, kind, path, body string) *outcome {
	return l.do(r, kind, "POST", path, body, false)
}

// do sends one request and records how it went. A stream (a build) is
// read to its last event, whose status is the request's.
func (l *load) do(r int, kind, method, path, body string, stream bool) *outcome {
	o := &outcome{replica: r, kind: kind, phase: int(l.phase.Load())}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.h.replicas[r].URL()+path, rd)
	if err != nil {
		o.err = err.Error()
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	began := time.Now()
	o.began = began
	resp, err := l.h.client.Do(req)
	if err != nil {
		o.latency = time.Since(began)
		o.err = err.Error()
		o.hang = errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil
		return o
	}
	defer resp.Body.Close()
	// A whole answer: a JSON body is written once the operation is done
	// and its row kept. An event stream's status goes out when the stream
	// starts, long before its result, so a kill then cuts it off: that
	// request was never answered.
	if f := l.onAnswer.Load(); f != nil && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		(*f)(r, resp.Header.Get("X-Request-Id"))
	}
	raw, err := io.ReadAll(resp.Body)
	o.latency = time.Since(began)
	o.status, o.id = resp.StatusCode, resp.Header.Get("X-Request-Id")
	o.retryAfter = resp.Header.Get("Retry-After") != ""
	if err != nil {
		o.status, o.err = 0, err.Error()
		o.hang = ctx.Err() != nil
		return o
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		l.readStream(o, raw)
		return o
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		o.err = "not a JSON object: " + clip(string(raw))
		return o
	}
	if id, _ := obj["request_id"].(string); id != "" {
		o.bodyID = id == o.id
	}
	if o.status != 200 {
		o.err, _ = obj["error"].(string)
	}
	return o
}

// readStream takes a stream's last event as the request's answer.
func (l *load) readStream(o *outcome, raw []byte) {
	var event, data string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = v
		}
	}
	var obj map[string]any
	if json.Unmarshal([]byte(data), &obj) != nil {
		o.status, o.err = 0, "a stream without a final event: "+clip(string(raw))
		return
	}
	switch event {
	case "result":
		o.ok, _ = obj["ok"].(bool)
		if !o.ok {
			o.err, _ = obj["error"].(string)
		}
	case "error":
		st, _ := obj["status"].(float64)
		o.status = int(st)
		o.err, _ = obj["error"].(string)
		id, _ := obj["request_id"].(string)
		o.bodyID = id != "" && id == o.id
		o.retryAfter = obj["retry_after"] != nil
	default:
		o.status, o.err = 0, "a stream ending with "+event
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// p99 is the 99th percentile of the latencies of outs in phase, in ms.
func p99(outs []*outcome, phase int) float64 {
	var ms []float64
	for _, o := range outs {
		if o.phase == phase && o.status != 0 {
			ms = append(ms, float64(o.latency.Microseconds())/1000)
		}
	}
	if len(ms) == 0 {
		return 0
	}
	slices.Sort(ms)
	return ms[min(len(ms)-1, int(float64(len(ms))*0.99))]
}
