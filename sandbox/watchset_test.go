package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// TestWatchSet: which folders a file watch watches, and which events count,
// with links to files and folders, a folder entry and a missing entry.
func TestWatchSet(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	etc, real := filepath.Join(root, "etc"), filepath.Join(root, "real")
	for _, d := range []string{etc, real, filepath.Join(etc, "certs")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(real, "resolv.conf"), filepath.Join(etc, "hosts")} {
		if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// /etc/resolv.conf as systemd-resolved has it: a link elsewhere.
	if err := os.Symlink("../real/resolv.conf", filepath.Join(etc, "resolv.conf")); err != nil {
		t.Fatal(err)
	}
	// A path through a linked folder is named through the real one.
	if err := os.Symlink("etc", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	set := newWatchSet([]string{
		filepath.Join(etc, "resolv.conf"),
		filepath.Join(root, "link", "hosts"),
		filepath.Join(etc, "certs"),
		filepath.Join(etc, "missing"),        // folder watched for the others
		filepath.Join(root, "gone", "hosts"), // no folder
		filepath.Join(root, "absent"),        // its folder is not watched for it
	})
	wantDirs := []string{etc, filepath.Join(etc, "certs"), real}
	if !slices.Equal(set.dirs, wantDirs) {
		t.Errorf("watched folders %q, want %q", set.dirs, wantDirs)
	}
	for _, tt := range []struct {
		op   fsnotify.Op
		name string
		want bool
	}{
		{fsnotify.Create, filepath.Join(etc, "resolv.conf"), true},  // the link replaced
		{fsnotify.Create, filepath.Join(real, "resolv.conf"), true}, // its target replaced
		{fsnotify.Rename, filepath.Join(etc, "hosts"), true},
		{fsnotify.Write, filepath.Join(etc, "hosts"), true},
		{fsnotify.Chmod, filepath.Join(etc, "hosts"), false},
		{fsnotify.Chmod | fsnotify.Write, filepath.Join(etc, "hosts"), true},
		{fsnotify.Create, filepath.Join(etc, "missing"), true},
		{fsnotify.Remove, filepath.Join(etc, "certs"), true},                           // the folder itself
		{fsnotify.Create, filepath.Join(etc, "certs", "ca-certificates.crt"), true},    // a file in it
		{fsnotify.Create, filepath.Join(etc, "certs", "sub", "ca.crt"), false},         // not recursive
		{fsnotify.Create, filepath.Join(etc, "hosts.tmp"), false},                      // a neighbour
		{fsnotify.Create, filepath.Join(real, "resolv.conf.new"), false},               // another
		{fsnotify.Create, filepath.Join(root, "link", "hosts"), false},                 // never named so
		{fsnotify.Create, filepath.Join(etc, "certs") + "//ca-certificates.crt", true}, // fsnotify under "/"
	} {
		ev := fsnotify.Event{Name: tt.name, Op: tt.op}
		if got := set.matters(ev); got != tt.want {
			t.Errorf("matters(%v) = %v, want %v", ev, got, tt.want)
		}
	}
}
