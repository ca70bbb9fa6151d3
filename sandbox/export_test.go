package sandbox

import "os"

// ConfineWorker confines this process as a worker started with Landlock
// setting mode would be: on success it does not return in the calling image,
// which starts over confined; there, called again, it returns the ABI version
// in force. It lets a test bypass the interpreter and prove what the kernel
// alone refuses.
func ConfineWorker(mode Landlock) (abi int, why string, err error) {
	if os.Getenv(landlockEnv) != landlockApplied {
		os.Setenv(landlockEnv, string(mode))
	}
	c := confineWorker()
	return c.abi, c.why, c.err
}
