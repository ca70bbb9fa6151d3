package main

import (
	"cmp"
	"path/filepath"
	"strings"

	mcpconfig "adaptbot/mcp/config"
)

// inFolder resolves the relative working folders and commands of stdio
// servers against dir, the servers file's folder, as one reads the file:
// the server may run in another folder (ADAPTBOT_HOME), and exec would
// resolve them against that one.
func inFolder(servers []mcpconfig.Server, dir string) []mcpconfig.Server {
	out := make([]mcpconfig.Server, len(servers))
	for i, s := range servers {
		if s.Transport == mcpconfig.TransportStdio {
			if s.Dir != "" && !filepath.IsAbs(s.Dir) {
				s.Dir = filepath.Join(dir, s.Dir)
			}
			// A command with a folder in it (not one found on PATH) is
			// relative to its working folder, as exec takes it.
			if strings.ContainsRune(s.Command, filepath.Separator) && !filepath.IsAbs(s.Command) {
				s.Command = filepath.Join(cmp.Or(s.Dir, dir), s.Command)
			}
		}
		out[i] = s
	}
	return out
}
