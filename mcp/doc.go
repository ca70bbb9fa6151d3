// Package mcp connects AdaptBot to the Model Context Protocol, both ways, with
// the official Go SDK (imported as sdk).
//
// As a server, Server publishes the registry's serving tools: one MCP tool per
// registry tool, its input schema taken from the tool's Input. Arguments are
// checked with contract.Validate before the call, calls run in the sandbox, and
// a bad argument or a failed call comes back as a tool error (isError) with a
// message that names the tool and what went wrong, never as a protocol error.
// The server follows the registry: every build, modification, deletion,
// rollback or hand edit reaches connected clients as
// notifications/tools/list_changed. It serves stdio (`adaptbot mcp`) and
// streamable HTTP (the main server's /mcp).
//
// As a client, Hub connects to the MCP servers people already run, as a
// configuration file lists them (ParseConfig accepts the usual
// {"mcpServers": {...}} form and an array form, and says exactly what is wrong
// and where). It lists every server in parallel, each within its own time
// limit, follows pagination, and never lets one failing, hanging or crashing
// server stop the others: results are partial and each failure names its
// server. It keeps sessions for calls, reconnects once when a server restarted,
// refreshes a server's tools on its list_changed, and keeps a router.Index in
// step, each server being the domain of its tools.
//
// Search and the listing functions look at AdaptBot's own tools (the server
// "local") and the external ones together.
//
// The package must not import app or agent, and it must not write to standard
// output on its own: in stdio mode that stream belongs to the protocol.
package mcp
