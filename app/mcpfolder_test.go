package main

import (
	"testing"

	mcpconfig "adaptbot/mcp/config"
)

// TestServersInTheirFilesFolder: a stdio server's relative working folder
// and command are the servers file's, wherever the server runs
// (ADAPTBOT_HOME); absolute ones, commands found on PATH and HTTP servers
// are left as they are.
func TestServersInTheirFilesFolder(t *testing.T) {
	got := inFolder([]mcpconfig.Server{
		{Name: "a", Transport: mcpconfig.TransportStdio, Command: "./bin/fs", Dir: "data"},
		{Name: "b", Transport: mcpconfig.TransportStdio, Command: "bin/fs"},
		{Name: "c", Transport: mcpconfig.TransportStdio, Command: "npx", Dir: "/srv"},
		{Name: "d", Transport: mcpconfig.TransportStdio, Command: "/opt/fs", Dir: "/srv"},
		{Name: "e", Transport: mcpconfig.TransportHTTP, URL: "http://localhost:8000/mcp"},
	}, "/home/me/adaptbot")
	want := []struct{ command, dir string }{
		{"/home/me/adaptbot/data/bin/fs", "/home/me/adaptbot/data"},
		{"/home/me/adaptbot/bin/fs", ""},
		{"npx", "/srv"},
		{"/opt/fs", "/srv"},
		{"", ""},
	}
	for i, w := range want {
		if got[i].Command != w.command || got[i].Dir != w.dir {
			t.Errorf("%s: command %q in %q, want %q in %q", got[i].Name, got[i].Command, got[i].Dir, w.command, w.dir)
		}
	}
}
