// Package adaptbot holds the words every room of AdaptBot shares, and
// imports nothing but the standard library: Error and its Kind, the one
// vocabulary of failure every operation returns and every door turns into
// a status; Failure, the one vocabulary of a failed tool call; Tool, the
// one description of a tool, of which the toolbox's spec, the registry's
// entries, MCP servers' tools and the listings are views; Example, one
// check a tool must pass; AutoRepair, what the server does on its own when
// a tool keeps failing; Digest, the one name of content by its SHA-256;
// the words of a request's row (its intent, door and categories); and the
// module's go.mod and go.sum, carried into the binary. A
// tool exported as a standalone Go module (package shipping) requires the
// same versions of the MCP SDK and its dependencies that AdaptBot is built
// and tested with, and takes their checksums from here, so the module
// builds from a Go module cache alone, offline.
//
// The rest of AdaptBot lives in the folders below.
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

// FailureSource is failure.go, for a native worker program (package
// native): its copy of package sandbox reports a call's Failure, and of
// the root it needs no more.
//
//go:embed failure.go
var FailureSource []byte
