package toolkit

import (
	"embed"
	"io/fs"
)

// packageSource is the whole toolkit as Go source, tests aside.
//
//go:embed call.go policy.go toolkit.go do.go
var packageSource embed.FS

// PackageSource returns the Go source of the toolkit package, by file name:
// a native worker program (package native) compiles this very package, so
// that a tool meets the same egress policy and calls other tools the same
// way natively as interpreted. A new non-test file must be added to the
// list above; the native tier's build test fails until it is.
func PackageSource() map[string][]byte {
	out := map[string][]byte{}
	names, _ := fs.Glob(packageSource, "*.go")
	for _, name := range names {
		b, _ := packageSource.ReadFile(name)
		out[name] = b
	}
	return out
}
