package toolbox

import (
	"os"
	"testing"

	"adaptbot/sandbox/sandboxtest"
)

// workerEnv makes the test binary a sandbox worker: the pools of the
// nested-call tests start this same binary.
const workerEnv = "ADAPTBOT_TOOLBOX_TEST_WORKER"

func TestMain(m *testing.M) {
	sandboxtest.ServeWorkerIf(workerEnv)
	os.Exit(m.Run())
}
