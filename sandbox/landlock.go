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
	// LandlockRequire refuses to start a worker that cannot be confined,
	// by Landlock and the seccomp filter both: NewPool fails on a kernel
	// without either.
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
// itself starts over with landlockApplied, a colon and the setting in its
// place (see confineWorker): the new image knows by it that it is the one
// to install the seccomp filter, and whether it must.
const (
	landlockEnv     = "ADAPTBOT_WORKER_LANDLOCK"
	landlockApplied = "applied"
)

// startedOver reports whether setting, the value of landlockEnv, is that of
// an image startOverConfined started, and with which Landlock setting.
func startedOver(setting string) (Landlock, bool) {
	mode, ok := strings.CutPrefix(setting, landlockApplied+":")
	return Landlock(mode), ok
}

// confinement is what a worker found of its confinement (Landlock, and the
// seccomp filter), with err set when it must not serve so
// (LandlockRequire).
type confinement struct {
	workerConfinement
	err error
}

// confineWorker confines a worker process, first thing, as Options.Landlock
// (passed in landlockEnv) says. Landlock restricts only the thread that asks,
// and a Go process has many threads from its start, so a worker restricts
// one thread and starts its own executable over from it: every thread of the
// new image descends from the restricted one (startOverConfined). When that
// succeeds, confineWorker does not return in the first image; in the second
// it checks that the confinement holds, installs the seccomp filter and
// returns both (confineStartedOver). When the worker cannot be confined it
// returns why, with err set if it must not run unconfined.
func confineWorker() confinement {
	setting := os.Getenv(landlockEnv)
	if mode, ok := startedOver(setting); ok {
		return confineStartedOver(mode)
	}
	mode, err := ParseLandlock(setting)
	if err != nil {
		return unconfined(err.Error(), fmt.Errorf("sandbox worker: %s: %w", landlockEnv, err))
	}
	if mode == LandlockOff {
		return unconfined("Landlock is off", nil)
	}
	abi, err := landlockABI()
	if err == nil {
		// Returns only if it failed.
		if err = startOverConfined(abi, mode); err != nil {
			err = fmt.Errorf("confining the worker failed: %w", err)
		}
	}
	if mode == LandlockRequire {
		return unconfined(err.Error(), fmt.Errorf("sandbox worker: Landlock is required, but %w", err))
	}
	return unconfined(err.Error(), nil)
}

func unconfined(why string, err error) confinement {
	return confinement{workerConfinement: workerConfinement{Unconfined: why}, err: err}
}

// confineStartedOver runs in the image startOverConfined started, before
// the worker reads anything from the server: it checks that Landlock holds
// and puts the seccomp filter on every thread at once (installSeccomp). The
// filter waits for this image because it refuses execve, which the start-over
// needs. With LandlockRequire, a worker short of either refuses to serve.
func confineStartedOver(mode Landlock) confinement {
	c := confinement{workerConfinement: checkConfined()}
	if err := installSeccomp(); err != nil {
		c.NoSeccomp = err.Error()
	} else {
		c.Seccomp = true
	}
	if mode == LandlockRequire {
		switch {
		case c.Landlock == 0:
			c.err = fmt.Errorf("sandbox worker: Landlock is required, but %s", unconfinedReason(c.Unconfined))
		case !c.Seccomp:
			c.err = fmt.Errorf("sandbox worker: the seccomp filter is required, but %s", c.NoSeccomp)
		}
	}
	return c
}

// LandlockABI returns the Landlock ABI version of the running kernel, or an
// error saying why there is none (a kernel built without it, Landlock left
// out of the boot-time LSM list, or an OS other than Linux).
func LandlockABI() (int, error) { return landlockABI() }

// describe is how Stats and the log put a worker's confinement:
// "Landlock ABI 7, seccomp", or what is missing and why.
func (c workerConfinement) describe() string {
	if c.Landlock == 0 {
		return "not confined: " + unconfinedReason(c.Unconfined)
	}
	s := fmt.Sprintf("Landlock ABI %d", c.Landlock)
	if c.Seccomp {
		return s + ", seccomp"
	}
	return s + ", no seccomp filter: " + noSeccompReason(c.NoSeccomp)
}

// required says why a worker confined as c may not serve under
// LandlockRequire, or nil. Workers refuse themselves; this catches a worker
// binary that knows nothing of Landlock or seccomp, and says nothing.
func (c workerConfinement) required() error {
	switch {
	case c.Landlock == 0:
		return fmt.Errorf("worker is %s, and Landlock is required", c.describe())
	case !c.Seccomp:
		return fmt.Errorf("worker is %s, and the seccomp filter is required", c.describe())
	}
	return nil
}

// weaker reports whether c is less confined than d: an older Landlock ABI
// (none being the oldest), or the same without the seccomp filter.
func (c workerConfinement) weaker(d workerConfinement) bool {
	return c.Landlock < d.Landlock || c.Landlock == d.Landlock && !c.Seccomp && d.Seccomp
}

func unconfinedReason(why string) string {
	if why == "" {
		return "the worker did not say why (a worker binary without Landlock support?)"
	}
	return why
}

func noSeccompReason(why string) string {
	if why == "" {
		return "the worker did not say why (a worker binary without seccomp support?)"
	}
	return why
}
