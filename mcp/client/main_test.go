package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/mcp/config"
)

// helperEnv makes the test binary itself a stdio MCP server (see
// serveHelper), so the hub's stdio path is tested without building
// anything.
const helperEnv = "ADAPTBOT_MCP_TEST_HELPER"

// onceEnv names a file that makes the first helper started with it "deaf"
// (see serveDeaf); the helpers started after it serve normally.
const onceEnv = "ADAPTBOT_MCP_TEST_ONCE"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "stdio":
		serveHelper()
		return
	case "deaf-once":
		if f, err := os.OpenFile(os.Getenv(onceEnv), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			f.Close()
			serveDeaf()
		}
		serveHelper()
		return
	}
	os.Exit(m.Run())
}

// fileIn names the file the counting tools append to.
type fileIn struct {
	File string `json:"file"`
}

// countCall appends a line to file: a tool call that has run leaves one.
func countCall(file string) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	fmt.Fprintln(f, os.Getpid())
	f.Close()
}

// serveHelper is a small stdio server: "pid" says which process answers,
// "exit_soon" answers and then exits, as a crashing server would; "count"
// records that it ran, and "crash" records it and exits without answering,
// as a server that dies while running a call does.
func serveHelper() {
	s := sdk.NewServer(&sdk.Implementation{Name: "helper", Version: "1"}, &sdk.ServerOptions{Instructions: "A helper server for tests."})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "Returns the id of the process that answers."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "exit_soon", Description: "Answers, then exits."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			go func() {
				time.Sleep(50 * time.Millisecond)
				os.Exit(0)
			}()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "bye"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "count", Description: "Records that it ran."},
		func(_ context.Context, _ *sdk.CallToolRequest, in fileIn) (*sdk.CallToolResult, any, error) {
			countCall(in.File)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "counted"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Records that it ran, then exits without answering."},
		func(_ context.Context, _ *sdk.CallToolRequest, in fileIn) (*sdk.CallToolResult, any, error) {
			countCall(in.File)
			os.Exit(1)
			return nil, nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	os.Exit(0)
}

// helperConfig is a stdio server config that runs serveHelper.
func helperConfig(t *testing.T, name string) config.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return config.Server{Name: name, Transport: config.TransportStdio, Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{helperEnv: "stdio"}}
}

// serveDeaf is a server that stops reading: it answers the handshake and
// tools/list as a plain JSON-RPC loop, but closes its stdin before it
// answers tools/list, so the client's next write finds no reader, while the
// process lives on and keeps its stdout open, as if nothing had happened.
func serveDeaf() {
	in := bufio.NewScanner(os.Stdin)
	answer := func(id json.RawMessage, result string) {
		fmt.Fprintf(os.Stdout, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n", id, result)
	}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // notifications
		}
		switch req.Method {
		case "initialize":
			answer(req.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"deaf","version":"1"}}`, req.Params.ProtocolVersion))
		case "tools/list":
			os.Stdin.Close()
			answer(req.ID, `{"tools":[{"name":"count","inputSchema":{"type":"object","properties":{"file":{"type":"string"}}}}]}`)
			stop := make(chan os.Signal, 1)
			signal.Notify(stop, syscall.SIGTERM)
			<-stop // until the hub stops it
			os.Exit(0)
		default:
			fmt.Fprintf(os.Stdout, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":\"no such method\"}}\n", req.ID)
		}
	}
	os.Exit(0)
}
