package main

import "strings"

// Tools that call tools (toolkit.Call) need three things wired in
// openWorld; see the report of issue 18 for the lines:
//
//   - registry.Options.Known: externalTool, so that a tool may call an
//     external MCP server's tool, even before the server is connected;
//   - w.box.LimitCallDepth(cfg.MaxCallDepth) (ADAPTBOT_MAX_CALL_DEPTH);
//   - generator.Options.Tools = w.box and Finder = w.feed, so the gate runs
//     examples with the real callees and the model sees what it may call.

// externalTool reports whether name, as a tool names a callee
// ("server__tool" or "server/tool"), belongs to one of the configured MCP
// servers, connected or not: registry.Options.Known. servers lists them
// (nil before the hub exists, or without one).
func externalTool(servers func() []string) func(name string) bool {
	return func(name string) bool {
		for _, s := range servers() {
			if rest, ok := strings.CutPrefix(name, s); ok && len(rest) > 2 && (rest[0] == '/' || strings.HasPrefix(rest, "__")) {
				return true
			}
		}
		return false
	}
}
