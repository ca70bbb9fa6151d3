// Package client is AdaptBot's MCP client: the Hub, which connects to the
// MCP servers people already run, as a configuration file (package config)
// lists them, with the official Go SDK (imported as sdk).
//
// It lists every server in parallel, each within its own time limit, follows
// pagination, and never lets one failing, hanging or crashing server stop the
// others: results are partial and each failure names its server. It keeps
// sessions for calls, refreshes a server's tools on its list_changed, and
// reports each server's new list (Hub.OnChange), which a toolbox.Set joins
// and the wiring feeds to the router. It validates no arguments itself:
// every call comes through the toolbox, which has.
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
// The package must not import app or agent, and it must not write to
// standard output: a stdio server's output is the protocol.
package client
