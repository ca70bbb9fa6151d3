package registry

import "os"

// exists reports whether path names something on disk.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
