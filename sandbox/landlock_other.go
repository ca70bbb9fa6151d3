//go:build !linux

package sandbox

import "errors"

// Off Linux there is no Landlock: workers run unconfined under LandlockAuto,
// and NewPool refuses LandlockRequire.
var errNotLinux = errors.New("this OS has no Landlock (it is Linux-only)")

func landlockABI() (int, error) { return 0, errNotLinux }

func startOverConfined(abi int, mode Landlock) error { return errNotLinux }

func checkConfined() workerConfinement { return workerConfinement{Unconfined: errNotLinux.Error()} }

// landlockWatched is empty: no worker is confined, so none need replacing
// when a file changes.
func landlockWatched() []string { return nil }
