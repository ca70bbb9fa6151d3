package toolbox

import (
	"fmt"
	"os"
	"testing"

	"adaptbot/sandbox"
)

// workerEnv makes the test binary a sandbox worker: the pools of the
// nested-call tests start this same binary.
const workerEnv = "ADAPTBOT_TOOLBOX_TEST_WORKER"

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
