// Package adaptbot carries the module's go.mod and go.sum into the binary.
// A tool exported as a standalone Go module (package shipping) requires the
// same versions of the MCP SDK and its dependencies that AdaptBot is built
// and tested with, and takes their checksums from here, so the module
// builds from a Go module cache alone, offline.
//
// It holds nothing else and imports nothing but embed; the rest of
// AdaptBot lives in the folders below.
package adaptbot

import _ "embed"

// GoMod is the module's go.mod.
//
//go:embed go.mod
var GoMod []byte

// GoSum is the module's go.sum.
//
//go:embed go.sum
var GoSum []byte
