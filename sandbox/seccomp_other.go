//go:build !linux

package sandbox

import "errors"

// Off Linux there is no seccomp; no worker gets as far as installing it
// either, since only a worker confined by Landlock does.
var errNoSeccomp = errors.New("this OS has no seccomp (it is Linux-only)")

func seccompSupport() error { return errNoSeccomp }

func installSeccomp() error { return errNoSeccomp }
