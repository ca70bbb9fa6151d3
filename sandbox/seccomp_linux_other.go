//go:build linux && !amd64 && !arm64

package sandbox

// The seccomp filter is written for amd64 and arm64 only: system call
// numbers differ by architecture, and a filter with wrong numbers would deny
// the wrong calls. Elsewhere buildSeccompFilter says so, and workers run
// without the filter (LandlockAuto) or are refused (LandlockRequire).
const (
	seccompAuditArch = 0
	seccompX32Bit    = 0
	sysSeccomp       = 0
)

var seccompNumbers map[string]uint32
