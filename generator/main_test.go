package generator

import (
	"fmt"
	"os"
	"testing"

	"adaptbot/sandbox"
)

// workerEnv makes the test binary a sandbox worker: the test that runs a
// built tool against a real server (calendar_test.go) runs it in a worker
// process of this same binary, as the server does.
const workerEnv = "ADAPTBOT_GENERATOR_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := sandbox.ServeWorker(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
