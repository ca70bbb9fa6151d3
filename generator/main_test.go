package generator

import (
	"os"
	"testing"

	"adaptbot/sandbox/sandboxtest"
)

// workerEnv makes the test binary a sandbox worker: the test that runs a
// built tool against a real server (calendar_test.go) runs it in a worker
// process of this same binary, as the server does.
const workerEnv = "ADAPTBOT_GENERATOR_TEST_WORKER"

func TestMain(m *testing.M) {
	sandboxtest.ServeWorkerIf(workerEnv)
	os.Exit(m.Run())
}
