package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// greeter calls echo; shouter calls greeter: chains of one and two
// nested calls.
const greeter = `// Package greeter greets through echo.
package greeter

import (
	"context"

	"adaptbot/toolkit"
)

type Input struct {
	Name string ` + "`json:\"name\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	out, err := toolkit.Call(ctx, "echo", map[string]string{"text": "hello " + in.Name})
	if err != nil {
		return "", err
	}
	return "greeter: " + out, nil
}
`

const shouter = `// Package shouter shouts a greeting.
package shouter

import (
	"context"
	"strings"

	"adaptbot/toolkit"
)

type Input struct {
	Name string ` + "`json:\"name\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	out, err := toolkit.Call(ctx, "greeter", map[string]string{"name": in.Name})
	if err != nil {
		return "", err
	}
	return strings.ToUpper(out), nil
}
`

// fleetHost stands in for a replica's toolbox: it runs the tools a tool
// calls on the fleet, as nested calls.
type fleetHost struct {
	fleet *cluster.Fleet
	tools map[string]string
}

func (h *fleetHost) CallTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	src, ok := h.tools[name]
	if !ok {
		return "", fmt.Errorf("no tool named %q", name)
	}
	res, err := h.fleet.Run(ctx, sandbox.Call{Tool: name, Source: []byte(src), Input: args, Nested: true})
	return res.Output, err
}

func newFleetHost(fleet *cluster.Fleet) *fleetHost {
	return &fleetHost{fleet: fleet, tools: map[string]string{"echo": echoTool, "greeter": greeter, "shouter": shouter}}
}

func (h *fleetHost) run(tool, input string) (string, error) {
	ctx := toolkit.WithCaller(context.Background(), h)
	res, err := h.fleet.Run(ctx, sandbox.Call{Tool: tool, Source: []byte(h.tools[tool]), Input: json.RawMessage(input)})
	return res.Output, err
}

// TestFleetNestedCall: a tool on a fleet worker calls tools through the
// replica that sent the call, two deep.
func TestFleetNestedCall(t *testing.T) {
	srv := clustertest.Start(t)
	startWorker(t, srv.URL(), "a")
	h := newFleetHost(cluster.NewFleet(connect(t, srv.URL(), "replica"), 5*time.Second))
	if out, err := h.run("greeter", `{"name": "ada"}`); err != nil || out != "greeter: hello ada" {
		t.Errorf("greeter on the fleet = %q, %v", out, err)
	}
	if out, err := h.run("shouter", `{"name": "ada"}`); err != nil || out != "GREETER: HELLO ADA" {
		t.Errorf("shouter on the fleet = %q, %v", out, err)
	}
	delete(h.tools, "echo")
	if _, err := h.run("greeter", `{"name": "ada"}`); err == nil || !strings.Contains(err.Error(), `no tool named "echo"`) {
		t.Errorf("greeter without echo = %v", err)
	}
	// Without a host, the tool's call fails in the tool.
	fleet := cluster.NewFleet(connect(t, srv.URL(), "bare"), 5*time.Second)
	if _, err := fleet.Run(context.Background(), sandbox.Call{Tool: "greeter", Source: []byte(greeter), Input: json.RawMessage(`{}`)}); err == nil || !strings.Contains(err.Error(), "calling other tools is not available here") {
		t.Errorf("greeter without a host = %v", err)
	}
}

// TestFleetNestedCallsFillNoPool: fleet workers whose sandbox pools have
// one worker each serve callers that wait for callees on the same workers.
func TestFleetNestedCallsFillNoPool(t *testing.T) {
	srv := clustertest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fleetWorkerEnv+"="+srv.URL(), fleetPoolEnv+"=1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck
	fleet := cluster.NewFleet(connect(t, srv.URL(), "replica"), 10*time.Second)
	waitForFleet(t, fleet)
	h := newFleetHost(fleet)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			out, err := h.run("shouter", fmt.Sprintf(`{"name": "n%d"}`, i))
			if err == nil && out != fmt.Sprintf("GREETER: HELLO N%d", i) {
				err = fmt.Errorf("shouter = %q", out)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
