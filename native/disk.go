package native

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// DefaultCacheLimit bounds the native builder's build cache on disk: 256
// MiB. One build of a tool from an empty cache leaves about 90 MiB (the
// standard library's packages it uses, compiled); with the binaries (Keep,
// about 5 MiB each), the native folder stays under about 350 MiB.
const DefaultCacheLimit = 256 << 20

// trimCache removes the files of the build cache in dir used least
// recently (the go command marks a file it uses by its modification time,
// as its own trimming reads it) until they take three quarters of limit,
// when they take more than limit. It returns the bytes freed. A missing
// file is a miss the next build fills again, never an error.
func trimCache(dir string, limit int64) (int64, error) {
	type file struct {
		path string
		size int64
		at   time.Time
	}
	var files []file
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		files = append(files, file{p, fi.Size(), fi.ModTime()})
		total += fi.Size()
		return nil
	})
	if err != nil || total <= limit {
		return 0, err
	}
	slices.SortFunc(files, func(a, b file) int { return a.at.Compare(b.at) })
	var freed int64
	for _, f := range files {
		if total-freed <= limit/4*3 {
			break
		}
		if os.Remove(f.path) == nil {
			freed += f.size
		}
	}
	return freed, nil
}

// binDir is the folder of the native binaries this AdaptBot can run:
// Dir/bin/<runtimeID>. The first time it is asked for, before any build of
// this server's, it removes what other runtimes (an older AdaptBot,
// another Go) left under Dir/bin, whose binaries this one must not run,
// and what a build cut short left behind (sources, half-written binaries).
func (t *Tier) binDir() string {
	root := filepath.Join(t.opts.Dir, "bin")
	dir := filepath.Join(root, runtimeID())
	t.cleanBins.Do(func() {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != filepath.Base(dir) {
				os.RemoveAll(filepath.Join(root, e.Name()))
			}
		}
		stale, _ := filepath.Glob(filepath.Join(t.opts.Dir, "src-*"))
		tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
		for _, p := range append(stale, tmps...) {
			os.RemoveAll(p)
		}
	})
	return dir
}

// binary returns the native binary of v: the one kept for its digest (a
// rollback finds it again), or a new build.
func (t *Tier) binary(v *version) (string, error) {
	if err := Check(v.tool, v.code); err != nil {
		return "", fmt.Errorf("%w: it may not be compiled natively: %v", errRefused, err)
	}
	bins := t.binDir()
	bin := filepath.Join(bins, v.digest)
	now := time.Now()
	if err := os.Chtimes(bin, now, now); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(bins, 0o700); err != nil {
		return "", err
	}
	t.setStatus(v, Status{Tier: Interpreted, State: StateBuilding, Reason: "it is being compiled natively"})
	tmp := bin + ".tmp"
	began := time.Now()
	t.cache.RLock()
	err := compile(t.ctx, t.opts.Go, t.opts.Dir, t.opts.Cache, []Source{{Tool: v.tool, Code: v.code}}, tmp)
	t.cache.RUnlock()
	t.trimCache()
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	t.opts.Log.Info(logCompiled, "tool", v.tool, "digest", v.digest[:12], "took", time.Since(began).Round(time.Millisecond))
	t.prune(bins)
	return bin, nil
}

// logCompiled is the log's message for each native build that succeeded.
const logCompiled = "native: compiled"

// trimCache bounds the build cache (Options.CacheLimit), while no build
// runs.
func (t *Tier) trimCache() {
	t.cache.Lock()
	defer t.cache.Unlock()
	dir := t.opts.Cache
	if dir == "" {
		dir = filepath.Join(t.opts.Dir, "cache")
	}
	if removed, err := trimCache(dir, t.opts.CacheLimit); err != nil {
		t.opts.Log.Warn("native: the build cache was not trimmed", "dir", dir, "err", err)
	} else if removed > 0 {
		t.opts.Log.Info("native: trimmed the build cache", "dir", dir, "freed_bytes", removed)
	}
}

// prune keeps the Keep most recently used binaries, and those of versions
// serving natively now.
func (t *Tier) prune(bins string) {
	entries, err := os.ReadDir(bins)
	if err != nil {
		return
	}
	type kept struct {
		name string
		at   time.Time
	}
	var all []kept
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !strings.HasSuffix(e.Name(), ".tmp") {
			all = append(all, kept{e.Name(), fi.ModTime()})
		}
	}
	if len(all) <= t.opts.Keep {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.After(all[j].at) })
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range all[t.opts.Keep:] {
		if v := t.versions[k.name]; v != nil && v.pool != nil {
			continue // serving now: dropped once it stops
		}
		os.Remove(filepath.Join(bins, k.name))
		if v := t.versions[k.name]; v != nil && v.status.State == StateNative {
			v.status = Status{Tier: Interpreted, State: StateEvicted, Reason: "its native binary was dropped to keep the disk bounded"}
			delete(t.versions, k.name) // its next success builds it again
		}
	}
}
