package sandbox

import (
	"fmt"
	"syscall"
)

// dataHeadroom is added to the memory limit for RLIMIT_DATA. The rlimit is
// the hard backstop behind GOMEMLIMIT and the watchdog: it counts every
// writable private mapping, which for a Go process is the heap as mapped (in
// 64 MiB arenas, never unmapped), its metadata and stacks, about 100 MiB at
// rest. RLIMIT_AS would not do: the runtime reserves over a gigabyte of
// address space it never touches.
const dataHeadroom = 512 << 20

// setLimits caps the worker's data segment, so that an allocation the
// watchdog is too slow to see fails as a Go "out of memory" fatal error, and
// turns off core dumps.
func setLimits(memoryLimit int64) error {
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fmt.Errorf("set RLIMIT_CORE: %w", err)
	}
	if raceEnabled {
		return nil
	}
	limit := uint64(memoryLimit) + dataHeadroom
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return fmt.Errorf("set RLIMIT_DATA: %w", err)
	}
	return nil
}
