package sandbox

// A worker confined by Landlock also installs a seccomp filter, a denylist,
// on every one of its threads before it serves anything (installSeccomp): the
// system calls a tool never needs and an escape would use — other processes'
// memory, running programs, kernel modules, mounts, namespaces, eBPF,
// io_uring, the key store, the clock — fail with EPERM. It is a third wall:
// a tool reaches no system call of its own past the interpreter's symbol
// table, and Landlock already refuses it files; the filter narrows what the
// kernel exposes should both give way. Options.Landlock governs it too:
// LandlockAuto reports a kernel without seccomp filters and carries on,
// LandlockRequire refuses a worker without the filter, LandlockOff has
// neither. README.md lists what is denied and why.

// SeccompSupport returns nil when a worker can install its seccomp filter
// here, or why it cannot: a kernel without seccomp filters (or older than
// Linux 4.14), an architecture the filter is not written for (it is for
// amd64 and arm64), or an OS other than Linux.
func SeccompSupport() error { return seccompSupport() }
