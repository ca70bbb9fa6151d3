//go:build !linux

package sandbox

// setLimits has no rlimits to set off Linux: GOMEMLIMIT and the watchdog
// remain.
func setLimits(memoryLimit int64) error { return nil }
