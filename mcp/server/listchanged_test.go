package server

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioListChangedWithinASecond drops a tool into the tools folder by
// hand while a client is connected to `adaptbot mcp` over stdio, and
// checks that notifications/tools/list_changed reaches the client within a
// second: with `adaptbot mcp` alone in a folder no server owns yet, and
// beside `adaptbot serve`, which owns the folder (the server accepts the
// file and saves the registry; `adaptbot mcp` follows the save).
func TestStdioListChangedWithinASecond(t *testing.T) {
	bin := adaptbotBinary(t)
	for _, beside := range []bool{false, true} {
		name := "alone"
		if beside {
			name = "beside the server"
		}
		t.Run(name, func(t *testing.T) {
			a := newAppEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if beside {
				startServer(t, ctx, bin, a)
			}
			changed := make(chan time.Time, 16)
			sc := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- time.Now() },
			})
			cmd := exec.Command(bin, "mcp")
			cmd.Env = a.env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cs, err := sc.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
			}
			defer cs.Close()
			if names := toolNames(t, cs); slices.Contains(names, "echo") || !slices.Contains(names, "calculator") {
				t.Fatalf("tools/list = %v before the drop", names)
			}

			dropped := time.Now()
			writeTool(t, a.tools, "echo", echoSource("echo", "echoes text."))
			for {
				select {
				case at := <-changed:
					if at.Before(dropped) {
						continue
					}
					if d := at.Sub(dropped); d > time.Second {
						t.Errorf("list_changed came %v after the tool was dropped, want within a second", d)
					} else {
						t.Logf("list_changed %v after the drop", d.Round(time.Millisecond))
					}
					if !slices.Contains(toolNames(t, cs), "echo") {
						t.Error("echo is not in tools/list after list_changed")
					}
					return
				case <-ctx.Done():
					t.Fatalf("no list_changed after dropping tools/echo/echo.go\nstderr:\n%s", stderr.String())
				}
			}
		})
	}
}
