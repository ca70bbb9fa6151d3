package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"adaptbot/homelock"
)

// serveOnce runs `adaptbot serve` with env until it fails or ctx ends,
// and returns its error and what it printed.
func serveOnce(ctx context.Context, env map[string]string) (error, string) {
	var out bytes.Buffer
	err := runWith(ctx, []string{"adaptbot", "serve"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out, testHooks(nil))
	return err, out.String()
}

// TestSecondServerInAFolderIsRefused: while a server runs in a folder, a
// second one started there refuses at once, naming the first one's address,
// and writes nothing; readers (tools list, mcp) still work there.
func TestSecondServerInAFolderIsRefused(t *testing.T) {
	addr := closedAddr(t)
	in := start(t, map[string]string{"ADAPTBOT_ADDR": addr})
	if in.url != "http://"+addr {
		t.Fatalf("first server at %s, want %s", in.url, addr)
	}

	second := make(map[string]string, len(in.env))
	for k, v := range in.env {
		second[k] = v
	}
	second["ADAPTBOT_ADDR"] = "127.0.0.1:0" // another port: the folder is what is shared
	before := tree(t, in.dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err, out := serveOnce(ctx, second)
	if _, ok := errors.AsType[*homelock.HeldError](err); !ok {
		t.Fatalf("second server: %v, want it refused\n%s", err, out)
	}
	if !strings.Contains(err.Error(), "http://"+addr) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Errorf("refusal %q does not name the first server (pid %d, http://%s)", err, os.Getpid(), addr)
	}
	if strings.Contains(out, "listening") {
		t.Errorf("second server started:\n%s", out)
	}
	if after := tree(t, in.dir); !equalTrees(before, after) {
		t.Error("the refused server changed the folder")
	}

	// Readers take no lock.
	listed, err := runEnv(t, second, nil, "tools", "list", "--server", "local")
	if err != nil || !strings.Contains(listed, "calculator") {
		t.Errorf("tools list beside the server: %v\n%s", err, listed)
	}
	var mcpOut bytes.Buffer
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	if err := runWith(t.Context(), []string{"adaptbot", "mcp"}, func(k string) string {
		if k == "ADAPTBOT_HOME" {
			return in.dir
		}
		return second[k]
	}, strings.NewReader(req), &mcpOut, io.Discard, testHooks(nil)); err != nil || !strings.Contains(mcpOut.String(), `"id":1`) {
		t.Errorf("mcp beside the server: %v\n%s", err, mcpOut.String())
	}

	// Once the first stops, the folder is free.
	in.stop()
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err2 error
	var out2 string
	go func() { err2, out2 = serveOnce(ctx2, second); close(done) }()
	waitUntil(t, "a server after the first stopped", func() bool {
		h, held, _ := homelock.Read(in.dir)
		return held && h.PID == os.Getpid()
	})
	cancel2()
	<-done
	if err2 != nil {
		t.Errorf("server after the first stopped: %v\n%s", err2, out2)
	}
}

// TestBusyPortSaysWhichSetting: a port another program holds is refused
// with the setting that changes it.
func TestBusyPortSaysWhichSetting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dir := t.TempDir()
	copyTools(t, dir)
	env := cliEnv(dir, ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err, out := serveOnce(ctx, env)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("serve on a busy port: %v\n%s", err, out)
	}
	var next int
	fmt.Sscan(port, &next)
	want := fmt.Sprintf("ADAPTBOT_ADDR=127.0.0.1:%d", next+1)
	if !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), want) {
		t.Errorf("busy port: %q, want it to say the port is in use and suggest %s", err, want)
	}
	// The folder is free again for the next try.
	if _, held, _ := homelock.Read(filepath.Dir(env["ADAPTBOT_REGISTRY"])); held {
		t.Error("the folder is still locked after the server gave up")
	}
}
