// Package config reads the file that lists the external MCP servers
// AdaptBot connects to. Parse accepts the usual {"mcpServers": {...}} form
// and an array form, expands ${VAR} and ${VAR:-default} from the
// environment in "command", "args", "env" values, "url" and "headers"
// values, and says exactly what is wrong and where, an unset variable
// included.
//
// The package reads files and the environment it is given; it connects to
// nothing.
package config
