package sandbox

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A worker whose server goes away ends, even in the middle of a call.
func TestWorkerEndsWithItsServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := workerConfig{MemoryLimit: 256 << 20, MaxGoroutines: 100, MaxOutput: 1 << 20, CacheSize: 4}
	env := []string{"ADAPTBOT_SANDBOX_TEST_WORKER=1"} // see TestMain
	w, err := startProc([]string{exe}, env, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.kill()
	src := []byte(`// Package nap sleeps.
package nap

import (
	"context"
	"time"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	time.Sleep(time.Minute)
	return "", nil
}
`)
	if err := w.send(request{ID: 1, Op: opCall, Tool: "nap", Hash: sourceHash("nap", src), Source: src, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the call is under way
	w.reqs.Close()
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker outlived its server's pipe")
	}
}

// A worker command given as a relative path (a native binary under a
// relative home) starts: workers start in /, so the pool makes it absolute
// against the working folder first.
func TestRelativeWorkerCommand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(exe))
	p, err := NewPool(Options{PoolSize: 1, WorkerCommand: []string{"./" + filepath.Base(exe)},
		WorkerEnv: []string{"ADAPTBOT_SANDBOX_TEST_WORKER=1"}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	src := []byte("// Package hi greets.\npackage hi\n\nimport \"context\"\n\ntype Input struct{}\n\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"hi\", nil }\n")
	res, err := p.Run(context.Background(), Call{Tool: "hi", Source: src, Input: []byte(`{}`)})
	if err != nil || res.Output != "hi" {
		t.Fatalf("a worker started as ./%s: %q, %v", filepath.Base(exe), res.Output, err)
	}
}
