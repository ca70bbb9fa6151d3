package sandbox

import (
	"embed"
	"io/fs"
)

// nativeSource is the worker side of the sandbox, as Go source: what a
// native worker program (package native) compiles in place of the
// interpreter, so that it speaks the same protocol and is confined by the
// same Landlock rules and seccomp filter as an interpreted worker.
//
//go:embed sandbox.go protocol.go worker.go options.go outcome.go native_worker.go
//go:embed landlock.go landlock_linux.go landlock_other.go limits_linux.go limits_other.go
//go:embed native.go race_off.go race_on.go clock.go
//go:embed seccomp.go seccomp_linux.go seccomp_linux_amd64.go seccomp_linux_arm64.go seccomp_linux_other.go seccomp_other.go
var nativeSource embed.FS

// NativeBuildTag is the build tag a native worker program is built with: it
// selects native_worker.go, the compiled tool's stand-in for the
// interpreter.
const NativeBuildTag = "adaptbot_native"

// NativeToolPath is where a native worker program's tool packages live; a
// goroutine in them after Execute returned is a leak.
const NativeToolPath = "adaptbot/native/tools/"

// NativeSource returns the Go source of the sandbox's worker side, by file
// name, for a native worker program's copy of package sandbox. Its main
// calls ServeNative (native_worker.go) with the tools it was built with.
func NativeSource() map[string][]byte {
	out := map[string][]byte{}
	names, _ := fs.Glob(nativeSource, "*.go")
	for _, name := range names {
		b, _ := nativeSource.ReadFile(name)
		out[name] = b
	}
	return out
}

// Digest returns the digest of a tool version that workers key it by: a
// native worker program serves the version whose digest it was built for,
// and no other.
func Digest(tool string, source []byte) string { return sourceHash(tool, source) }
