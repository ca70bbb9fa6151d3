package sandbox

// SeccompNumber is the number of the system call name on this architecture,
// as the seccomp filter knows it; 0 if it does not.
func SeccompNumber(name string) uintptr { return uintptr(seccompNumbers[name]) }
