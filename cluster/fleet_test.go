package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"adaptbot"
	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/sandbox"
)

const echoTool = `// Package echo says its text back.
package echo

import "context"

type Input struct {
	Text string ` + "`json:\"text\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	return in.Text, nil
}
`

const sleepTool = `// Package sleepy sleeps past any short limit.
package sleepy

import (
	"context"
	"time"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	time.Sleep(3 * time.Second) // deaf to ctx: the sandbox must stop it
	return "woke", nil
}
`

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func connect(t testing.TB, url, name string) *nats.Conn {
	t.Helper()
	nc, err := cluster.Connect(cluster.Options{URL: url, Name: name, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// counting is a sandbox.Runner that counts the calls it serves.
type counting struct {
	sandbox.Runner
	calls atomic.Int64
}

func (c *counting) Run(ctx context.Context, call sandbox.Call) (sandbox.Result, error) {
	c.calls.Add(1)
	return c.Runner.Run(ctx, call)
}

// startWorker serves the fleet from this process with an in-process runner
// until the test ends. It returns once a call made on probeURL (default url)
// is answered.
func startWorker(t testing.TB, url, id string, probeURL ...string) *counting {
	t.Helper()
	nc := connect(t, url, id)
	r := &counting{Runner: sandbox.NewInProcess(sandbox.Options{Log: quiet})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cluster.ServeFleet(ctx, nc, r, id, quiet) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		r.Close()
	})
	probe := url
	if len(probeURL) > 0 {
		probe = probeURL[0]
	}
	waitForFleet(t, cluster.NewFleet(connect(t, probe, "probe"), time.Second))
	return r
}

// waitForFleet calls until some worker answers.
func waitForFleet(t testing.TB, f *cluster.Fleet) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := f.Run(context.Background(), echoCall("ping"))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fleet worker answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func echoCall(text string) sandbox.Call {
	in, _ := json.Marshal(map[string]string{"text": text})
	return sandbox.Call{Tool: "echo", Source: []byte(echoTool), Input: in}
}

func TestFleetOfTwoAnswersConcurrentCalls(t *testing.T) {
	srv := clustertest.Start(t)
	a := startWorker(t, srv.URL(), "a")
	b := startWorker(t, srv.URL(), "b")
	// The server's default call limit: the test is of how the calls are
	// shared, and two cores with the race detector are slow to load.
	fleet := cluster.NewFleet(connect(t, srv.URL(), "replica"), 0)
	before := a.calls.Load() + b.calls.Load()

	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("call %d", i)
			res, err := fleet.Run(context.Background(), echoCall(want))
			if err != nil {
				errs <- err
				return
			}
			if res.Output != want {
				errs <- fmt.Errorf("got %q, want %q", res.Output, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := a.calls.Load() + b.calls.Load() - before; got != n {
		t.Errorf("the workers served %d calls, want %d", got, n)
	}
	if a.calls.Load() == 0 || b.calls.Load() == 0 {
		t.Errorf("one worker served every call: a %d, b %d", a.calls.Load(), b.calls.Load())
	}
}

func TestFleetPassesTheSandboxVerdict(t *testing.T) {
	srv := clustertest.Start(t)
	startWorker(t, srv.URL(), "a")
	fleet := cluster.NewFleet(connect(t, srv.URL(), "replica"), 5*time.Second)
	_, err := fleet.Run(context.Background(), sandbox.Call{Tool: "sleepy", Source: []byte(sleepTool), Input: json.RawMessage(`{}`), Timeout: 100 * time.Millisecond})
	if got := adaptbot.FailureOf(err); got != adaptbot.FailTimeout {
		t.Errorf("a call past its limit: kind %q (%v), want %q", got, err, adaptbot.FailTimeout)
	}
	err = fleet.Compile(context.Background(), "broken", []byte("package broken\nfunc {"))
	if got := adaptbot.FailureOf(err); got != adaptbot.FailCompile {
		t.Errorf("a broken tool: kind %q (%v), want %q", got, err, adaptbot.FailCompile)
	}
}

func TestFleetWithoutWorkersSaysSo(t *testing.T) {
	srv := clustertest.Start(t)
	fleet := cluster.NewFleet(connect(t, srv.URL(), "replica"), 5*time.Second)
	_, err := fleet.Run(context.Background(), echoCall("hello"))
	if got := adaptbot.FailureOf(err); got != adaptbot.FailUnavailable {
		t.Fatalf("kind %q (%v), want %q", got, err, adaptbot.FailUnavailable)
	}
	if !strings.Contains(err.Error(), "no fleet worker") {
		t.Errorf("error %q does not say there is no worker", err)
	}
}

func TestFleetWorkerKilledMidCallFailsThatCallOnly(t *testing.T) {
	srv := clustertest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fleetWorkerEnv+"="+srv.URL())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck
	fleet := cluster.NewFleet(connect(t, srv.URL(), "replica"), 2*time.Second)
	waitForFleet(t, fleet) // the process is the only worker

	// A plain subscriber sees each call as NATS routes it to the queue
	// group, without taking part in it.
	spyConn := connect(t, srv.URL(), "spy")
	spy, err := spyConn.SubscribeSync(cluster.FleetRun)
	if err == nil {
		err = spyConn.Flush() // the server has the subscription
	}
	if err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	go func() {
		_, err := fleet.Run(context.Background(), sandbox.Call{Tool: "sleepy", Source: []byte(sleepTool), Input: json.RawMessage(`{}`)})
		slow <- err
	}()
	for { // the slow call has gone to the process, the only worker so far
		m, err := spy.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(m.Data), `"sleepy"`) {
			break
		}
	}
	startWorker(t, srv.URL(), "survivor")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()                         //nolint:errcheck
	time.Sleep(200 * time.Millisecond) // NATS drops the dead worker's subscription

	for i := range 20 {
		want := fmt.Sprintf("after %d", i)
		res, err := fleet.Run(context.Background(), echoCall(want))
		if err != nil || res.Output != want {
			t.Errorf("call after the kill: %q, %v; want %q", res.Output, err, want)
		}
	}
	err = <-slow
	if got := adaptbot.FailureOf(err); got != adaptbot.FailUnavailable {
		t.Fatalf("the call in the killed worker: kind %q (%v), want %q", got, err, adaptbot.FailUnavailable)
	}
	if !strings.Contains(err.Error(), "died") {
		t.Errorf("error %q does not say the worker died", err)
	}
}

func TestFleetCarriesOnAfterANATSRestart(t *testing.T) {
	srv := clustertest.Start(t)
	startWorker(t, srv.URL(), "a")
	fleet := cluster.NewFleet(connect(t, srv.URL(), "replica"), 5*time.Second)
	srv.Restart()
	// Both ends reconnect and the worker's subscription comes back.
	waitForFleet(t, fleet)
	if res, err := fleet.Run(context.Background(), echoCall("again")); err != nil || res.Output != "again" {
		t.Errorf("after the restart: %q, %v", res.Output, err)
	}
}

const slowTool = `// Package slow works eight seconds.
package slow

import (
	"context"
	"time"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	time.Sleep(8 * time.Second)
	return "done", nil
}
`

// TestAFullWorkerSendsCallsElsewhere: a worker whose sandbox workers are
// all busy takes no more calls, so none waits behind a long one there, and
// its death costs only the call it was running. (A worker used to queue
// every call it was given: its death failed them all.)
func TestAFullWorkerSendsCallsElsewhere(t *testing.T) {
	srv := clustertest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fleetWorkerEnv+"="+srv.URL(), fleetPoolEnv+"=1") // one sandbox worker
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck
	fleet := cluster.NewFleet(connect(t, srv.URL(), "replica"), 10*time.Second)
	waitForFleet(t, fleet) // the process is the only worker

	slow := make(chan error, 1)
	go func() {
		_, err := fleet.Run(context.Background(), sandbox.Call{Tool: "slow", Source: []byte(slowTool), Input: json.RawMessage(`{}`)})
		slow <- err
	}()
	time.Sleep(time.Second) // the slow call has the process's only sandbox worker
	startWorker(t, srv.URL(), "free")

	errs := make(chan error, 10)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			want := fmt.Sprintf("call %d", i)
			res, err := fleet.Run(context.Background(), echoCall(want))
			if err == nil && res.Output != want {
				err = fmt.Errorf("got %q, want %q", res.Output, want)
			}
			errs <- err
		})
	}
	wg.Wait()
	select {
	case err := <-slow:
		t.Fatalf("the slow call ended (%v) before the ten short ones: they waited behind it", err)
	default:
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck
	if err := <-slow; adaptbot.FailureOf(err) != adaptbot.FailUnavailable || !strings.Contains(err.Error(), "died") {
		t.Errorf("the call on the killed worker: %v, want unavailable, saying the worker died", err)
	}
}
