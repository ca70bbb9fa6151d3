//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package registry

// On systems without flock (Windows, Plan 9, Solaris, AIX, wasm) there is no
// cross-process lock: lockFile and tryLockFile always succeed at once, so a
// Registry is only serialized by its in-process mutex (Registry.write) and
// a build's claim on a name only by the Generator's in-process map. Running
// the server and the CLI at the same time on such a system can still lose an
// entry, as it could before the lock file existed.

// haveFlock says that lockFile and tryLockFile lock across processes here.
const haveFlock = false

func lockFile(string) (func(), error) { return func() {}, nil }

func tryLockFile(string) (func(), error) { return func() {}, nil }

func isReadOnly(error) bool { return false }
