// Package adaptbot holds the words every room of AdaptBot shares and the
// contract between its doors and its service, and imports nothing but the
// standard library (benbjohnson/wtf's shape):
//
//   - Error and its Kind, the one vocabulary of failure every operation
//     returns and every door turns into a status; Failure and FailureOf,
//     the one vocabulary and the one reading of a failed tool call;
//   - Tool, the one description of a tool, and Entry, a local tool's
//     record, which embeds it;
//   - the operations' request and result types, the bodies that travel,
//     and the small interfaces of each area (ChatService, ToolService,
//     BuildService, LearningService, UserService, RequestService,
//     StatsService, Refuser), which package service implements and
//     package api implements over HTTP; Prepared and Stream, for the doors
//     that stream;
//   - the words of a request's row (its intent, door and categories),
//     Example, Mode, Digest, and the module's go.mod and go.sum, carried
//     into the binary. A tool exported as a standalone Go module (package
//     shipping) requires the same versions of the MCP SDK and its
//     dependencies that AdaptBot is built and tested with, and takes their
//     checksums from here, so the module builds from a Go module cache
//     alone, offline.
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
