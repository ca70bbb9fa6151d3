package sandbox

import "fmt"

// New returns the Runner that opts.Mode names.
func New(opts Options) (Runner, error) {
	switch opts.Mode {
	case "", ModeWorkers:
		return NewPool(opts)
	case ModeInProcess:
		if l, _ := ParseLandlock(string(opts.Landlock)); l == LandlockRequire {
			return nil, fmt.Errorf("sandbox: Landlock is required, but confines worker processes only, not mode %q", ModeInProcess)
		}
		return NewInProcess(opts), nil
	}
	return nil, fmt.Errorf("sandbox: unknown mode %q: use %q or %q", opts.Mode, ModeWorkers, ModeInProcess)
}
