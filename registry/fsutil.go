package registry

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so that a reader sees either the
// old file or the new one, never a torn one, and the new one survives a
// crash: the one way AdaptBot writes the files it keeps (the registry,
// history, failure cases, users, an exported bundle).
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFileAtomic(path, data, perm)
}

// writeFileAtomic replaces path with data so that a reader sees either the old
// file or the new one, never a torn one, and the new one survives a crash.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
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

// exists reports whether path names something on disk.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// removeStaleTemps removes the temporary files writeFileAtomic leaves when
// the process is killed mid-write (".tmp-NAME-*"): in dir and in each
// folder directly under it. Called at start-up by the folder's one
// writer, when no write of ours is under way.
func removeStaleTemps(dir string) {
	for _, pattern := range []string{filepath.Join(dir, ".tmp-*"), filepath.Join(dir, "*", ".tmp-*")} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if info, err := os.Lstat(m); err == nil && info.Mode().IsRegular() {
				os.Remove(m)
			}
		}
	}
}
