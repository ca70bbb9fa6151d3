package native

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"adaptbot/sandbox"
	"adaptbot/sandbox/sandboxtest"
)

// workerEnv makes the test binary an interpreted sandbox worker: the
// interpreted pools of these tests start this binary.
const workerEnv = "ADAPTBOT_NATIVE_TEST_WORKER"

func TestMain(m *testing.M) {
	sandboxtest.ServeWorkerIf(workerEnv)
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sandboxOptions are small limits for interpreted and native workers alike.
func sandboxOptions(t testing.TB) sandbox.Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return sandbox.Options{
		PoolSize:      1,
		CallTimeout:   3 * time.Second,
		MemoryLimit:   256 << 20,
		MaxGoroutines: 200,
		QueueTimeout:  20 * time.Second,
		WorkerCommand: []string{exe},
		WorkerEnv:     []string{workerEnv + "=1"},
		Log:           testLog(),
	}
}

func testLog() *slog.Logger {
	if os.Getenv("ADAPTBOT_SANDBOX_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// testCache is the tests' build cache: kept across runs (the first build of
// the standard library takes minutes on a busy machine), and used by no
// one but these tests' native builder.
func testCache(t testing.TB) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "adaptbot-native-test")
}

// goCmd is the go command, or skips the test without one.
func goCmd(t testing.TB) string {
	t.Helper()
	g := Toolchain(os.Getenv)
	if g == "" {
		t.Skip("no Go toolchain")
	}
	return g
}

// shared is one native worker program built once per test binary, serving
// every tool the tests need natively, each under its own digest.
var shared struct {
	once  sync.Once
	dir   string
	bin   string
	tools map[string]Source
	err   error
}

// sharedBinary builds, once, a native worker program of tools, and returns
// its path; every later call must ask for a subset of the first's tools.
func sharedBinary(t testing.TB, tools ...Source) string {
	t.Helper()
	g := goCmd(t)
	shared.once.Do(func() {
		shared.tools = map[string]Source{}
		for _, s := range tools {
			shared.tools[s.Digest()] = s
		}
		if shared.dir, shared.err = os.MkdirTemp("", "adaptbot-native-"); shared.err != nil {
			return
		}
		shared.bin = filepath.Join(shared.dir, "shared")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		start := time.Now()
		shared.err = compile(ctx, g, shared.dir, testCache(t), tools, shared.bin)
		t.Logf("built the shared native worker program of %d tools in %v", len(tools), time.Since(start).Round(time.Millisecond))
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	for _, s := range tools {
		if _, ok := shared.tools[s.Digest()]; !ok {
			t.Fatalf("tool %s is not in the shared native worker program", s.Tool)
		}
	}
	return shared.bin
}

func readTool(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
