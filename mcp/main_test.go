package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// helperEnv makes the test binary itself a stdio MCP server (see
// serveHelper), so the hub's stdio path is tested without building
// anything.
const helperEnv = "ADAPTBOT_MCP_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "stdio" {
		serveHelper()
		return
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath)) // the adaptbot binary built for the tests
	}
	os.Exit(code)
}

// serveHelper is a small stdio server: "pid" says which process answers,
// "exit_soon" answers and then exits, as a crashing server would.
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
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	os.Exit(0)
}

// helperConfig is a stdio server config that runs serveHelper.
func helperConfig(t *testing.T, name string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Name: name, Transport: TransportStdio, Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{helperEnv: "stdio"}}
}
