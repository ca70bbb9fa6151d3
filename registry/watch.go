package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"adaptbot"
	"adaptbot/contract"
)

// Debounce is how long a path must stay quiet before a change is applied:
// editors write a file in several steps, and each step must not be a version.
const Debounce = 150 * time.Millisecond

// Watch follows the tools folder and the registry file until ctx ends. It
// watches folders, not files, since editors and our own atomic writes replace
// files by renaming, which drops a watch on the file itself. ready, if not
// nil, is closed once the watches are in place. A ReadOnly registry accepts
// no tool file on its own: a change in the tools folder makes it read the
// registry file again (see Options.ReadOnly and Sync).
func (r *Registry) Watch(ctx context.Context, ready chan<- struct{}) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("registry: watch: %w", err)
	}
	defer w.Close()
	toolsDir, err := filepath.Abs(r.opts.ToolsDir)
	if err != nil {
		return err
	}
	regPath, err := filepath.Abs(r.opts.Path)
	if err != nil {
		return err
	}
	if err := w.Add(toolsDir); err != nil {
		return fmt.Errorf("registry: watch %s: %w", toolsDir, err)
	}
	names, _ := r.scan()
	for _, n := range names {
		w.Add(filepath.Join(toolsDir, n))
	}
	if err := w.Add(filepath.Dir(regPath)); err != nil {
		return fmt.Errorf("registry: watch %s: %w", filepath.Dir(regPath), err)
	}
	if ready != nil {
		close(ready)
	}

	var (
		mu     sync.Mutex
		timers = map[string]*time.Timer{}
		wg     sync.WaitGroup
	)
	defer func() {
		mu.Lock()
		for _, t := range timers {
			if t.Stop() {
				wg.Done()
			}
		}
		mu.Unlock()
		wg.Wait()
	}()
	// later runs fn once key has been quiet for Debounce.
	later := func(key string, fn func()) {
		mu.Lock()
		defer mu.Unlock()
		if t, ok := timers[key]; ok && t.Stop() {
			wg.Done()
		}
		wg.Add(1)
		timers[key] = time.AfterFunc(Debounce, func() {
			defer wg.Done()
			mu.Lock()
			delete(timers, key)
			mu.Unlock()
			if ctx.Err() == nil {
				fn()
			}
		})
	}

	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			r.opts.Log.Warn("registry: watch error", "err", err)
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Name == regPath {
				later(regPath, func() { r.reloadFile(ctx) })
				continue
			}
			rel, err := filepath.Rel(toolsDir, ev.Name)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			parts := strings.Split(filepath.ToSlash(rel), "/")
			name := parts[0]
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || contract.ValidName(name) != nil {
				continue
			}
			if len(parts) == 1 {
				// The tool's folder itself: created, or renamed or removed.
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					w.Add(ev.Name)
				}
			} else if parts[len(parts)-1] != name+".go" {
				continue // tests, examples, temp files: not the tool's source
			}
			later(name, func() {
				if err := r.Sync(ctx, name); err != nil {
					r.opts.Log.Warn("tool not loaded; the last good version keeps serving", "tool", name, "err", err)
				}
			})
		}
	}
}

// reloadFile applies a change of the registry file: from a hand edit (or,
// for a ReadOnly registry, from the owner's save) whatever refreshLocked
// merges, announced to listeners. It then saves, which writes back any entry
// the edit dropped. A corrupt edit is reported and left for the next save to
// move aside.
func (r *Registry) reloadFile(ctx context.Context) {
	data, err := os.ReadFile(r.opts.Path)
	if err != nil {
		return
	}
	r.write.Lock()
	defer r.write.Unlock()
	if adaptbot.Digest(data) == r.seen {
		return // our own save, or one we have merged already
	}
	err = r.apply(func() ([]Event, error) {
		events := r.refreshLocked()
		if r.diskBad {
			return events, nil
		}
		return events, r.saveLocked()
	})
	if err != nil {
		r.opts.Log.Warn("registry: save", "err", err)
	}
}
