package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// Landlock says whether worker processes confine themselves with Landlock,
// the Linux kernel's unprivileged access control, as a second wall behind
// the interpreter's symbol table: should a tool ever reach a symbol it was
// not given, its worker can still open no file but the few read-only ones
// Go needs at run time (DNS and TLS configuration, time zones). README.md
// lists them.
type Landlock string

// The values of Options.Landlock.
const (
	// LandlockAuto confines workers where the kernel has Landlock and runs
	// them unconfined, said once in the log and in Stats, where it has not.
	LandlockAuto Landlock = "auto"
	// LandlockRequire refuses to start a worker that cannot be confined:
	// NewPool fails on a kernel without Landlock.
	LandlockRequire Landlock = "require"
	// LandlockOff never confines workers.
	LandlockOff Landlock = "off"
)

// ParseLandlock reads a Landlock setting as written in configuration; "" is
// LandlockAuto.
func ParseLandlock(s string) (Landlock, error) {
	switch l := Landlock(strings.ToLower(strings.TrimSpace(s))); l {
	case "":
		return LandlockAuto, nil
	case LandlockAuto, LandlockRequire, LandlockOff:
		return l, nil
	}
	return "", fmt.Errorf("landlock %q: use %q, %q or %q", s, LandlockAuto, LandlockRequire, LandlockOff)
}

// landlockEnv carries Options.Landlock to a worker, in its otherwise
// minimal environment: the worker must know it before it reads anything from
// the server, since it confines itself first. A worker that has confined
// itself starts over with landlockApplied in its place (see confineWorker).
const (
	landlockEnv     = "ADAPTBOT_WORKER_LANDLOCK"
	landlockApplied = "applied"
)

// confinement is what a worker found of Landlock: the ABI version in force,
// or why there is none.
type confinement struct {
	abi int    // Landlock ABI the worker is confined with; 0 if unconfined
	why string // why it is not confined
	err error  // set when it must not run unconfined (LandlockRequire)
}

// confineWorker confines a worker process, first thing, as Options.Landlock
// (passed in landlockEnv) says. Landlock restricts only the thread that asks,
// and a Go process has many threads from its start, so a worker restricts
// one thread and starts its own executable over from it: every thread of the
// new image descends from the restricted one (startOverConfined). When that
// succeeds, confineWorker does not return in the first image; in the second
// it checks that the confinement holds and returns it. When the worker cannot
// be confined it returns why, with err set if it must not run unconfined.
func confineWorker() confinement {
	setting := os.Getenv(landlockEnv)
	if setting == landlockApplied {
		return checkConfined()
	}
	mode, err := ParseLandlock(setting)
	if err != nil {
		return confinement{why: err.Error(), err: fmt.Errorf("sandbox worker: %s: %w", landlockEnv, err)}
	}
	if mode == LandlockOff {
		return confinement{why: "Landlock is off"}
	}
	abi, err := landlockABI()
	if err == nil {
		// Returns only if it failed.
		if err = startOverConfined(abi); err != nil {
			err = fmt.Errorf("confining the worker failed: %w", err)
		}
	}
	c := confinement{why: err.Error()}
	if mode == LandlockRequire {
		c.err = fmt.Errorf("sandbox worker: Landlock is required, but %w", err)
	}
	return c
}

// LandlockABI returns the Landlock ABI version of the running kernel, or an
// error saying why there is none (a kernel built without it, Landlock left
// out of the boot-time LSM list, or an OS other than Linux).
func LandlockABI() (int, error) { return landlockABI() }

// describeConfinement is how Stats and the log put a worker's confinement.
func describeConfinement(abi int, why string) string {
	if abi > 0 {
		return fmt.Sprintf("Landlock ABI %d", abi)
	}
	return "not confined: " + unconfinedReason(why)
}

func unconfinedReason(why string) string {
	if why == "" {
		return "the worker did not say why (a worker binary without Landlock support?)"
	}
	return why
}
