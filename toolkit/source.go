package toolkit

import (
	"embed"
	"io/fs"
)

// source is the toolkit's HTTP calls and egress policy, as Go source.
//
//go:embed toolkit.go policy.go do.go
var source embed.FS

// Source returns the Go source of the toolkit's HTTP calls (Do, PostJSON,
// Get, GetJSON, QueryEscape, ErrBlocked, the Client) and of its egress
// policy, by file name. A tool exported as a standalone module (package shipping) compiles
// this very code, so it meets the same egress rules outside the sandbox as
// inside. Anything else the toolkit offers must live in other files.
func Source() map[string][]byte {
	out := map[string][]byte{}
	names, _ := fs.Glob(source, "*.go")
	for _, name := range names {
		b, _ := source.ReadFile(name)
		out[name] = b
	}
	return out
}
