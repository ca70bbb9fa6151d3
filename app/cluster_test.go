package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// startFleetWorker runs `adaptbot worker --nats URL` through run(), as a
// fleet worker process would, until the returned stop is called.
func startFleetWorker(t *testing.T, url string) (stop func()) {
	t.Helper()
	env := map[string]string{"ADAPTBOT_WORKERS": "1", "ADAPTBOT_TOOL_TIMEOUT": "5s"}
	ctx, cancel := context.WithCancel(context.Background())
	out, errs := &syncBuffer{}, &syncBuffer{}
	ended := make(chan error, 1)
	go func() {
		ended <- runWith(ctx, []string{"adaptbot", "worker", "--nats", url, "--id", "w1"}, func(k string) string { return env[k] }, strings.NewReader(""), out, errs, testHooks(nil))
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "fleet worker w1") {
		select {
		case err := <-ended:
			t.Fatalf("fleet worker exited: %v\n%s", err, errs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet worker did not start\n%s", errs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("fleet worker: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestReplicaWithoutWorkersRunsToolsOnTheFleet(t *testing.T) {
	srv := clustertest.Start(t)
	stopWorker := startFleetWorker(t, srv.URL())
	in := start(t, map[string]string{"ADAPTBOT_NATS_URL": srv.URL(), "ADAPTBOT_WORKERS": "0", "ADAPTBOT_REPLICA_ID": "replica-a"})

	if code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "6*7"}`); code != 200 || !strings.Contains(str(r["output"]), "42") {
		t.Fatalf("run through the fleet: %d %v", code, r)
	}
	_, health := in.do(t, "GET", "/healthz", "")
	sb, _ := health["sandbox"].(map[string]any)
	cl, _ := health["cluster"].(map[string]any)
	if sb["mode"] != string(cluster.ModeFleet) || cl["connected"] != true || cl["url"] != srv.URL() {
		t.Errorf("/healthz sandbox %v, cluster %v", sb, cl)
	}

	// The row of that run reaches the cluster's stream, with the replica.
	nc, err := cluster.Connect(cluster.Options{URL: srv.URL(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var runs int
		_, err := cluster.ReadRows(context.Background(), nc, func(r benchmarks.Row) {
			if r.Intent == adaptbot.IntentRun && r.Category == "calculator" {
				runs++
			}
		})
		if err == nil && runs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream holds %d rows of the run, want 1 (%v)", runs, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	stopWorker()
	code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "1+1"}`)
	if code != 503 || !strings.Contains(str(r["error"]), "no fleet worker") {
		t.Errorf("run with no fleet worker: %d %v, want 503 saying so", code, r)
	}
}

func TestTwoReplicasShareTools(t *testing.T) {
	srv := clustertest.Start(t)
	a := start(t, map[string]string{"ADAPTBOT_NATS_URL": srv.URL(), "ADAPTBOT_REPLICA_ID": "a"})
	b := start(t, map[string]string{"ADAPTBOT_NATS_URL": srv.URL(), "ADAPTBOT_REPLICA_ID": "b"}, func(dir string) {
		// B starts with a tool the cluster does not hold: the cluster wins.
		writeTool(t, dir, "stray", strings.ReplaceAll(greetTool, "package greet", "package stray"))
	})
	if code, _ := b.do(t, "GET", "/api/tools/stray", ""); code != 404 {
		t.Errorf("B serves a tool the cluster does not hold: %d", code)
	}
	if code, _ := b.do(t, "GET", "/api/tools/calculator", ""); code != 200 {
		t.Errorf("B does not serve the tools A seeded the cluster with: %d", code)
	}

	// A hand edit on A reaches B: A's file watch takes it, the cluster
	// carries it, B's bucket watch applies it.
	writeTool(t, a.dir, "greet", greetTool)
	poll.Until(t, "B serves the tool added on A", func() bool {
		code, _ := b.do(t, "POST", "/api/tools/greet/run", `{"name": "Ada"}`)
		return code == 200
	})
	if code, r := b.do(t, "POST", "/api/tools/greet/run", `{"name": "Ada"}`); code != 200 || r["output"] != "hello, Ada" {
		t.Errorf("greet on B: %d %v", code, r)
	}

	// A delete on B is gone from A.
	if code, r := b.do(t, "DELETE", "/api/tools/greet", ""); code != 200 {
		t.Fatalf("delete on B: %d %v", code, r)
	}
	poll.Until(t, "the tool deleted on B is gone from A", func() bool {
		code, _ := a.do(t, "GET", "/api/tools/greet", "")
		return code == 404
	})

	// Each replica's dashboard counts every replica's rows, each once.
	a.do(t, "POST", "/api/tools/calculator/run", `{"expression": "1+1"}`)
	poll.Until(t, "A's report counts both replicas' rows", func() bool {
		want := len(a.rows(t)) + len(b.rows(t))
		for _, in := range []*instance{a, b} {
			_, r := in.do(t, "GET", "/api/benchmarks", "")
			if got, _ := r["requests"].(float64); int(got) != want {
				return false
			}
		}
		return true
	})

	// So does adaptbot report.
	var out, errOut bytes.Buffer
	env := map[string]string{"ADAPTBOT_NATS_URL": srv.URL()}
	if err := runWith(t.Context(), []string{"adaptbot", "report", "--format", "json"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut, hooks{}); err != nil {
		t.Fatalf("report: %v: %s", err, errOut.String())
	}
	var rep struct {
		Requests int `json:"requests"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Requests != len(a.rows(t))+len(b.rows(t)) {
		t.Errorf("report over the cluster: %d requests (%v), want %d", rep.Requests, err, len(a.rows(t))+len(b.rows(t)))
	}

	// NATS away: changes are refused with 503, tools still run.
	srv.Stop()
	poll.Until(t, "A sees NATS gone", func() bool {
		_, h := a.do(t, "GET", "/healthz", "")
		cl, _ := h["cluster"].(map[string]any)
		return cl["connected"] == false
	})
	code, r := a.do(t, "DELETE", "/api/tools/calculator", "")
	if code != 503 || !strings.Contains(str(r["error"]), "NATS is not connected") {
		t.Errorf("delete with NATS away: %d %v, want 503 saying why", code, r)
	}
	if code, r := a.do(t, "POST", "/api/tools/calculator/run", `{"expression": "6*7"}`); code != 200 {
		t.Errorf("a run with NATS away: %d %v", code, r)
	}
}

const greetTool = `// Package greet says hello.
package greet

import "context"

// Input names who to greet.
type Input struct {
	Name string ` + "`json:\"name\" jsonschema:\"who to greet\"`" + `
}

// Execute greets in.Name.
func Execute(ctx context.Context, in Input) (string, error) {
	return "hello, " + in.Name, nil
}
`

// TestTenConcurrentBuildsOfOneNameHaveOneWinner sends ten builds of one tool
// at once, five to each of two replicas: the cluster-wide lock lets one
// build, and the other nine are told who holds it.
func TestTenConcurrentBuildsOfOneNameHaveOneWinner(t *testing.T) {
	srv := clustertest.Start(t)
	script := romanScript(t)
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		reply := script(r)
		if r.Forced() == "write_tool" {
			reply.Delay = 500 * time.Millisecond // the winner holds the name meanwhile
		}
		return reply
	})
	env := func(id string) map[string]string {
		e := modelEnv(llmSrv)
		e["ADAPTBOT_NATS_URL"], e["ADAPTBOT_REPLICA_ID"] = srv.URL(), id
		return e
	}
	a, b := start(t, env("a")), start(t, env("b"))

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		won, out int
		others   []string
	)
	for i := range 10 {
		in := a
		if i%2 == 1 {
			in = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, evs := in.events(t, "/api/tools/build", `{"request": "roman numerals", "op": "CREATE", "tool": "roman_numerals"}`)
			last := evs[len(evs)-1]
			mu.Lock()
			defer mu.Unlock()
			switch {
			case strings.HasPrefix(last, "result ") && strings.Contains(last, `"ok":true`):
				won++
			// Refused by the other replica's cluster lock, or by this
			// replica's own generator, which holds the name first.
			case strings.HasPrefix(last, "error ") && (strings.Contains(last, "is being changed by") || strings.Contains(last, "already running")):
				out++
			default:
				others = append(others, last)
			}
		}()
	}
	wg.Wait()
	if won != 1 || out != 9 {
		t.Errorf("%d builds won and %d were refused, want 1 and 9; others: %v", won, out, others)
	}
	// The winner's tool serves on both replicas.
	for _, in := range []*instance{a, b} {
		poll.Until(t, "the built tool serves on both replicas", func() bool {
			code, r := in.do(t, "POST", "/api/tools/roman_numerals/run", `{"number": 4}`)
			return code == 200 && r["output"] == "IV"
		})
	}
}

// TestTwoReplicasShareTracesAndRatings: a chat answered through replica A
// is read, and rated, through replica B, with no sticky session; A sees the
// rating too.
func TestTwoReplicasShareTracesAndRatings(t *testing.T) {
	srv := clustertest.Start(t)
	model := llmtest.New(t, llmtest.Always(llmtest.Say("Paris.")))
	env := func(id string) map[string]string {
		e := modelEnv(model)
		e["ADAPTBOT_NATS_URL"], e["ADAPTBOT_REPLICA_ID"] = srv.URL(), id
		return e
	}
	a := start(t, env("a"))
	b := start(t, env("b"))
	code, chat := a.do(t, "POST", "/chat", `{"message": "the capital of France?"}`)
	if code != 200 || chat["response"] != "Paris." {
		t.Fatalf("chat on A: %d %v", code, chat)
	}
	id := str(chat["request_id"])
	if code, tr := b.do(t, "GET", "/api/requests/"+id, ""); code != 200 || tr["query"] != "the capital of France?" {
		t.Fatalf("A's trace read through B: %d %v", code, tr)
	}
	if code, r := b.do(t, "POST", "/api/requests/"+id+"/feedback", `{"score": -1, "comment": "too short"}`); code != 200 {
		t.Fatalf("a rating through B of A's answer: %d %v", code, r)
	}
	for name, in := range map[string]*instance{"A": a, "B": b} {
		_, tr := in.do(t, "GET", "/api/requests/"+id, "")
		if fb, _ := tr["feedback"].(map[string]any); fb == nil || fb["comment"] != "too short" {
			t.Errorf("%s's trace lacks the rating given through B: %v", name, tr["feedback"])
		}
	}
	_, recent := b.do(t, "GET", "/api/requests?limit=10", "")
	found := false
	for _, r := range recent["requests"].([]any) {
		found = found || r.(map[string]any)["request_id"] == id
	}
	if !found {
		t.Errorf("B's recent requests lack A's chat: %v", recent)
	}
}
