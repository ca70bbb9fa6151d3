// Package atomicfile is the one way AdaptBot writes the files it keeps (the
// registry, tool history, failure cases, users, an exported bundle): a
// reader sees either the old file or the new one, never a torn one, and
// the new one survives a crash. It imports only the standard library, so
// any room may write files without depending on another room.
package atomicfile

import (
	"os"
	"path/filepath"
)

// tempPrefix starts the name of a write's temporary file, beside its
// target: ".tmp-NAME-*".
const tempPrefix = ".tmp-"

// Write replaces path with data, creating its folder if needed, with the
// permissions perm.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: persists the rename on filesystems that need it
		d.Close()
	}
	return nil
}

// RemoveStale removes the temporary files Write leaves when the process is
// killed mid-write, in dir and in each folder directly under it. Only the
// folder's one writer calls it, at start-up, when no write is under way.
func RemoveStale(dir string) {
	for _, pattern := range []string{filepath.Join(dir, tempPrefix+"*"), filepath.Join(dir, "*", tempPrefix+"*")} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if info, err := os.Lstat(m); err == nil && info.Mode().IsRegular() {
				os.Remove(m)
			}
		}
	}
}
