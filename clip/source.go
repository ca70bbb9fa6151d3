package clip

import _ "embed"

// source is this package's Go source.
//
//go:embed clip.go
var source []byte

// Source returns the Go source of package clip, for a native worker program
// (package native), whose sandbox uses it.
func Source() []byte { return source }
