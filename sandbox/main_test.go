package sandbox_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/sandbox"
)

// workerEnvVar makes the test binary a worker: the pool under test starts
// this same binary, and TestMain serves instead of testing.
const workerEnvVar = "ADAPTBOT_SANDBOX_TEST_WORKER"

// probes are the other roles of the test binary, by the value of
// workerEnvVar, for the tests that start it as a child of their own.
var probes = map[string]func(){
	"landlock-probe": landlockProbe,
}

func TestMain(m *testing.M) {
	switch role := os.Getenv(workerEnvVar); role {
	case "die-after-hello":
		dieAfterHello(fmt.Sprintf(`{"pid":%d}`, os.Getpid()))
	case "landlock-only-hello":
		dieAfterHello(fmt.Sprintf(`{"pid":%d,"landlock":1,"no_seccomp":"said so"}`, os.Getpid()))
	case "1":
		if err := sandbox.ServeWorker(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		if probe := probes[role]; probe != nil {
			probe()
		}
	}
	os.Exit(m.Run())
}

// dieAfterHello is a broken worker: it starts, says hello, and exits.
func dieAfterHello(hello string) {
	in, out := os.NewFile(3, "requests"), os.NewFile(4, "responses")
	var n [4]byte
	io.ReadFull(in, n[:])                                        //nolint:errcheck
	io.ReadFull(in, make([]byte, binary.BigEndian.Uint32(n[:]))) //nolint:errcheck
	binary.BigEndian.PutUint32(n[:], uint32(len(hello)))
	out.Write(append(n[:], hello...)) //nolint:errcheck
	os.Exit(1)
}

// testOptions are small limits, so the hostile corpus runs quickly. Workers
// confine themselves (Landlock and seccomp) where the kernel allows, and must
// under ADAPTBOT_REQUIRE_LANDLOCK=1.
func testOptions(t testing.TB) sandbox.Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	landlock := sandbox.LandlockAuto
	if os.Getenv(requireLandlockEnv) == "1" {
		landlock = sandbox.LandlockRequire
	}
	return sandbox.Options{
		Landlock:      landlock,
		PoolSize:      2,
		CallTimeout:   time.Second,
		MemoryLimit:   256 << 20,
		MaxGoroutines: 200,
		QueueTimeout:  20 * time.Second,
		WorkerCommand: []string{exe},
		WorkerEnv:     []string{workerEnvVar + "=1"},
		Log:           testLog(),
	}
}

func testLog() *slog.Logger {
	if os.Getenv("ADAPTBOT_SANDBOX_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func newPool(t testing.TB, opts sandbox.Options) *sandbox.Pool {
	t.Helper()
	p, err := sandbox.NewPool(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// runners gives each test both runners.
func runners(t *testing.T, opts sandbox.Options) map[string]sandbox.Runner {
	in := sandbox.NewInProcess(opts)
	t.Cleanup(func() { in.Close() })
	return map[string]sandbox.Runner{"inprocess": in, "pool": newPool(t, opts)}
}

// waitFull waits until every configured worker is live and idle again.
func waitFull(t testing.TB, p *sandbox.Pool) sandbox.Stats {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := p.Stats()
		if s.Live == s.Size && s.Busy == 0 && s.Starting == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool not back to size: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processGone reports whether pid no longer exists.
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

func run(t testing.TB, r sandbox.Runner, tool, src, input string) (sandbox.Result, error) {
	t.Helper()
	return r.Run(context.Background(), sandbox.Call{Tool: tool, Source: []byte(src), Input: []byte(input)})
}

func wantKind(t testing.TB, err error, kind adaptbot.Failure, msg string) {
	t.Helper()
	if got := adaptbot.FailureOf(err); got != kind {
		t.Fatalf("kind %q, want %q (err: %v)", got, kind, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %q does not say %q", err, msg)
	}
}

const calculator = `// Package calculator adds two numbers.
package calculator

import "context"

// Input holds the numbers.
type Input struct {
	A float64 ` + "`json:\"a\"`" + `
	B float64 ` + "`json:\"b\"`" + `
}

// Output is the sum.
type Output struct {
	Sum float64 ` + "`json:\"sum\"`" + `
}

// Execute adds.
func Execute(ctx context.Context, in Input) (Output, error) {
	return Output{Sum: in.A + in.B}, nil
}
`

const echo = `// Package echo returns its text.
package echo

import (
	"context"
	"errors"
	"strings"
)

type Input struct {
	Text string ` + "`json:\"text\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	if in.Text == "" {
		return "", errors.New("nothing to echo")
	}
	return strings.ToUpper(in.Text), nil
}
`

func goroutines() int { return runtime.NumGoroutine() }

func ioEOF() string { return io.EOF.Error() }
