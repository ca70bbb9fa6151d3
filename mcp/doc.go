// Package mcp connects AdaptBot to the Model Context Protocol, both ways, with
// the official Go SDK (imported as sdk).
//
// As a server, Server publishes AdaptBot's own serving tools, as a toolbox.Box
// holds them: one MCP tool per local tool, its input schema taken from the
// tool's Input. Calls go through the toolbox, which validates the arguments
// and runs the tool in the sandbox, and a bad argument or a failed call comes
// back as a tool error (isError) with a message that names the tool and what
// went wrong, never as a protocol error. The server follows the Box: every
// build, modification, deletion,
// rollback or hand edit reaches connected clients as
// notifications/tools/list_changed. It serves stdio (`adaptbot mcp`) and
// streamable HTTP (the main server's /mcp).
//
// As a client, Hub connects to the MCP servers people already run, as a
// configuration file lists them (ParseConfig accepts the usual
// {"mcpServers": {...}} form and an array form, expands ${VAR} and
// ${VAR:-default} from the environment in "command", "args", "env" values,
// "url" and "headers" values, and says exactly what is wrong and where, an
// unset variable included). It lists every server in parallel, each within its
// own time limit, follows pagination, and never lets one failing, hanging or
// crashing server stop the others: results are partial and each failure names
// its server. It keeps sessions for calls, refreshes a server's tools on its
// list_changed, and reports each server's new list (OnChange), which a
// toolbox.Set joins; it validates no arguments itself, since every call comes
// through the toolbox.
//
// A tool call is never sent twice, since tools have side effects. When a
// server restarted or exited, the hub reconnects once and sends the call only
// if the failure certainly came before the request went out (the connection
// was already closed, the write failed before a byte was written, the HTTP
// server refused the session); a connection lost after that fails the call
// with an error saying it may or may not have run, and the next call
// reconnects. Stdio servers run in their own process group (on Unix), and
// stopping one (on Close, on a reconnect, after a failed connect) stops the
// whole group, so the processes that npx, uvx or a shell script started go too.
//
// Search and the listing functions look at AdaptBot's own tools (the server
// "local") and the external ones together.
//
// The package must not import app or agent, and it must not write to standard
// output on its own: in stdio mode that stream belongs to the protocol.
package mcp
