package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"adaptbot/cluster"
	"adaptbot/sandbox"
)

// fleetWorkerEnv makes the test binary a fleet worker process, connected to
// the NATS URL it holds, so a test can kill a worker mid-call.
const fleetWorkerEnv = "ADAPTBOT_CLUSTER_TEST_FLEET_WORKER"

func TestMain(m *testing.M) {
	if url := os.Getenv(fleetWorkerEnv); url != "" {
		os.Exit(serveFleetProcess(url))
	}
	os.Exit(m.Run())
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
	runner := sandbox.NewInProcess(sandbox.Options{})
	defer runner.Close()
	if err := cluster.ServeFleet(ctx, nc, runner, "process", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
