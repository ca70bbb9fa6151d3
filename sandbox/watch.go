package sandbox

import (
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// renewDebounce is how long the pool waits, after the first change of a
// burst to the files workers may read, before replacing them: a system tool
// that rewrites several of them, or one several times, costs one round of
// replacements, not one per event.
const renewDebounce = 200 * time.Millisecond

// fileWatch watches, for a pool of confined workers, the files their Landlock
// rules hold (landlockWatched). A rule holds the file (inode) opened when the
// worker started, not its name: when a system tool replaces one — writes a
// new /etc/resolv.conf and renames it over the old, as NetworkManager,
// systemd-resolved or dhclient do, or update-ca-certificates a root bundle —
// running workers may no longer read it, and Go's resolver in them falls back
// to 127.0.0.1:53. On such a change the pool replaces its workers
// (Pool.renew); the new ones' rules hold the new files.
//
// It watches folders, not files: a watch on a file stays with the old file
// when another is renamed over it. So it watches the folders that hold the
// entries, and the entries that are folders, and keeps the events that name
// an entry or a file in such a folder.
type fileWatch struct {
	paths    []string
	w        *fsnotify.Watcher
	log      *slog.Logger
	set      watchSet // replaced by arm, in the watching goroutine once it runs
	failSaid bool     // the log has said a folder could not be watched

	// observe, when set (only tests set it: WatchFiles), is told of each
	// event read and whether a round of replacements is due when the
	// debounce ends, since "nothing happened" cannot be waited for.
	observe watchObserver
}

// openFileWatch starts watching paths, or returns nil when it cannot (no
// inotify, or its limits reached), said once in the log: workers then run as
// before, and only replacing them (restarting the server) lets them read a
// replaced file. It returns nil, silently, when none of paths exists.
func openFileWatch(paths []string, log *slog.Logger, observe watchObserver) *fileWatch {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("sandbox: cannot watch the files workers may read; restart the server after they are replaced", "err", err)
		return nil
	}
	fw := &fileWatch{paths: paths, w: w, log: log, observe: observe}
	if fw.arm() == 0 {
		w.Close()
		return nil
	}
	return fw
}

// close stops fw, which may be nil.
func (fw *fileWatch) close() {
	if fw != nil {
		fw.w.Close()
	}
}

// arm works out what to watch from the files as they are now and watches
// those folders, again after a change (a folder replaced is a new one to
// watch, and a link may point elsewhere). It returns how many folders are
// watched; the first time some cannot be (inotify's limit on watches), it
// says which in the log.
func (fw *fileWatch) arm() int {
	fw.set = newWatchSet(fw.paths)
	var failed []string
	var first error
	for _, dir := range fw.set.dirs {
		if err := fw.w.Add(dir); err != nil {
			if first == nil {
				first = err
			}
			failed = append(failed, dir)
		}
	}
	if len(failed) > 0 && !fw.failSaid {
		fw.failSaid = true
		fw.log.Warn("sandbox: cannot watch some folders of files workers may read; restart the server after those are replaced", "folders", failed, "err", first)
	}
	return len(fw.set.dirs) - len(failed)
}

// note tells the observer, if any, of an event read (read) and whether a
// round is due.
func (fw *fileWatch) note(read, pending bool) {
	if fw.observe != nil {
		fw.observe.note(read, pending)
	}
}

// watchFiles replaces the pool's workers once after each burst of changes
// that matter, until the pool closes; p.wg counts it.
func (p *Pool) watchFiles(fw *fileWatch) {
	defer p.wg.Done()
	defer fw.close()
	debounce := time.NewTimer(renewDebounce)
	debounce.Stop()
	defer debounce.Stop()
	var changed string // what started the burst; "" when none is due
	for {
		select {
		case <-p.closing:
			return
		case ev, ok := <-fw.w.Events:
			if !ok {
				return
			}
			if changed == "" && fw.set.matters(ev) {
				changed = ev.Name
				debounce.Reset(renewDebounce)
			}
			fw.note(true, changed != "")
		case err, ok := <-fw.w.Errors:
			if !ok {
				return
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				p.log.Warn("sandbox: watching the files workers may read", "err", err)
			} else if changed == "" {
				// Events were lost: one of them may have mattered.
				changed = "(inotify events lost)"
				debounce.Reset(renewDebounce)
				fw.note(false, true)
			}
		case <-debounce.C:
			fw.arm()
			p.renew("a file workers may read changed: " + changed)
			changed = ""
			fw.note(false, false)
		}
	}
}

// watchSet is what a fileWatch watches, worked out from its entries as they
// are on disk: folders, symbolic links and all.
type watchSet struct {
	dirs    []string        // folders given to fsnotify
	names   map[string]bool // paths whose events matter
	folders map[string]bool // entries that are folders: events on the files in them matter too
}

// newWatchSet works out what to watch for paths. An entry matters by its
// name and, if it is a symbolic link, by the file it finally links to, which
// is what a Landlock rule holds (/etc/resolv.conf is often a link into
// /run/systemd/resolve, where systemd-resolved replaces the file). The folder
// of each entry that exists is watched; an entry that does not exist matters
// too when its folder is watched for another, since workers started before it
// appeared have no rule for it. An entry that is a folder is watched as well,
// though Landlock's rule on it covers files replaced in it: crypto/x509 reads
// the roots once per process, so a worker keeps a root bundle replaced there
// (update-ca-certificates in /etc/ssl/certs) until it is replaced. Only the
// files directly in it count: fsnotify does not watch folders recursively.
//
// Paths are written with their folders' links resolved, as fsnotify names
// events after the folder it was given.
func newWatchSet(paths []string) watchSet {
	s := watchSet{names: map[string]bool{}, folders: map[string]bool{}}
	dirs := map[string]bool{}
	for _, p := range paths {
		name, ok := realName(p)
		if !ok {
			continue // its folder does not exist
		}
		s.names[name] = true
		if _, err := os.Lstat(name); err != nil {
			continue
		}
		dirs[filepath.Dir(name)] = true
		target, err := filepath.EvalSymlinks(name)
		if err != nil {
			continue // a link to nothing
		}
		s.names[target] = true
		dirs[filepath.Dir(target)] = true
		if fi, err := os.Stat(target); err == nil && fi.IsDir() {
			s.folders[target] = true
			dirs[target] = true
		}
	}
	s.dirs = slices.Sorted(maps.Keys(dirs))
	return s
}

// realName is p with the links of its folder resolved, as fsnotify names it
// in the events of a watch on that folder; false if the folder does not
// exist.
func realName(p string) (string, bool) {
	p = filepath.Clean(p)
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return "", false
	}
	return filepath.Join(dir, filepath.Base(p)), true
}

// matters says whether ev may have replaced a file workers' rules hold: it
// names an entry, or a file in an entry that is a folder. A change of
// permissions or times alone (Chmod) leaves the file a rule holds as it was.
func (s watchSet) matters(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	name := filepath.Clean(ev.Name)
	return s.names[name] || s.folders[filepath.Dir(name)]
}

// openWatch starts watching the files workers may read if workers are about
// to be confined (Landlock not off, and the kernel has it); nil otherwise, or
// if the watch cannot be set up.
func (p *Pool) openWatch() *fileWatch {
	if p.opts.Landlock == LandlockOff {
		return nil
	}
	if _, err := landlockABI(); err != nil {
		return nil
	}
	return openFileWatch(p.opts.watchPaths, p.log, p.opts.watchObserve)
}

// startWatch acts on fw's events from now on if the workers that started are
// confined, and otherwise closes it: an unconfined worker opens files by
// name, so it reads a replaced file without being replaced itself.
func (p *Pool) startWatch(fw *fileWatch) {
	if fw == nil {
		return
	}
	if !p.Stats().Confined {
		fw.close()
		return
	}
	p.watch = fw
	p.wg.Add(1)
	go p.watchFiles(fw)
}
