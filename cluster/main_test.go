package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"adaptbot/cluster"
	"adaptbot/sandbox"
	"adaptbot/sandbox/sandboxtest"
)

// fleetWorkerEnv makes the test binary a fleet worker process, connected to
// the NATS URL it holds, so a test can kill a worker mid-call.
const fleetWorkerEnv = "ADAPTBOT_CLUSTER_TEST_FLEET_WORKER"

// sandboxWorkerEnv makes the test binary a sandbox worker process, for the
// pools of the benchmarks.
const sandboxWorkerEnv = "ADAPTBOT_CLUSTER_TEST_SANDBOX_WORKER"

func TestMain(m *testing.M) {
	sandboxtest.ServeWorkerIf(sandboxWorkerEnv)
	if url := os.Getenv(fleetWorkerEnv); url != "" {
		os.Exit(serveFleetProcess(url))
	}
	os.Exit(m.Run())
}

// fleetPoolEnv, when set, gives a fleet worker process a pool of that many
// sandbox worker processes in place of the in-process runner.
const fleetPoolEnv = "ADAPTBOT_CLUSTER_TEST_FLEET_POOL"

// poolOptions is a pool of n sandbox worker processes: this test binary.
func poolOptions(n int) sandbox.Options {
	exe, _ := os.Executable()
	return sandbox.Options{PoolSize: n, WorkerCommand: []string{exe}, WorkerEnv: []string{sandboxWorkerEnv + "=1"},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func serveFleetProcess(url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, err := cluster.Connect(cluster.Options{URL: url, Name: "test-worker"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	// Like `adaptbot worker --nats`: a pool of sandbox worker processes
	// (one, or as many as the benchmark says).
	var runner sandbox.Runner = sandbox.NewInProcess(sandbox.Options{})
	if n, _ := strconv.Atoi(os.Getenv(fleetPoolEnv)); n > 0 {
		pool, err := sandbox.NewPool(poolOptions(n))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		runner = pool
	}
	defer runner.Close()
	if err := cluster.ServeFleet(ctx, nc, runner, "process", slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
