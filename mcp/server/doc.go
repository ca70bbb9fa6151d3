// Package server publishes AdaptBot's own serving tools over the Model
// Context Protocol, with the official Go SDK (imported as sdk).
//
// It takes its tools from a toolbox.Box: one MCP tool per local tool, its
// input schema taken from the tool's Input, its output schema from its
// Output struct if it returns one (then each result is also sent as
// structured content, checked against that schema), a title, and the
// annotations readOnlyHint and openWorldHint from what its source reaches
// (see Annotations). The tools of external MCP servers are not passed on. Calls go through the toolbox, which validates
// the arguments and runs the tool in the sandbox, and a bad argument or a
// failed call comes back as a tool error (isError) with a message that names
// the tool and what went wrong, never as a protocol error. The server follows
// the Box: every build, modification, deletion, rollback or hand edit reaches
// connected clients as notifications/tools/list_changed. It serves stdio
// (`adaptbot mcp`) and streamable HTTP (the main server's /mcp).
//
// The package must not import app or agent, and it must not write to
// standard output on its own: in stdio mode that stream belongs to the
// protocol.
package server
