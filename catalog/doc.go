// Package catalog lists and searches AdaptBot's own tools (the server
// "local") and the tools of the external MCP servers together, and writes
// listings and results as text, tables or JSON: what `adaptbot search` and
// `adaptbot tools list` print. Its search ranks with the router's index over
// the tools it is given.
//
// It reads AdaptBot's own tools from the registry file and never opens the
// registry: the server owns it.
package catalog
