// Package mcp holds AdaptBot's side of the Model Context Protocol, both
// ways, with the official Go SDK, one job per package:
//
//   - server publishes AdaptBot's own tools (`adaptbot mcp` over stdio, /mcp
//     over streamable HTTP) and follows their changes with list_changed;
//   - client is the hub: it connects to the external MCP servers people
//     already run, lists and calls their tools, and reports each server's
//     changes, which a toolbox.Set joins;
//   - config reads the file that lists those servers.
//
// Tools reach every door as toolbox tools, so arguments are validated once,
// in package toolbox. Listing and searching AdaptBot's tools and the
// external ones together is package catalog's job.
//
// No package here may import app or agent, nor write to standard output on
// its own: in stdio mode that stream belongs to the protocol.
package mcp
