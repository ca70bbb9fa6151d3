package registry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The tests below start copies of the test binary as other processes (the
// server and the CLI are separate processes in real use). helperEnv tells a
// copy what to do instead of running the tests.
const helperEnv = "ADAPTBOT_REGISTRY_TEST_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		if err := runHelper(spec); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runHelper is a helper process. spec is "write DIR PREFIX N" (run
// writeScript on a Registry of its own) or "claim DIR NAME" (hold a claim on
// NAME, say so on stdout, and release it when stdin closes).
func runHelper(spec string) error {
	args := strings.Fields(spec)
	if len(args) < 3 {
		return fmt.Errorf("bad spec %q", spec)
	}
	opts := Options{ToolsDir: filepath.Join(args[1], "tools"), Path: filepath.Join(args[1], "tools_registry.json")}
	ctx := context.Background()
	switch args[0] {
	case "write":
		n, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		r, err := Open(ctx, opts)
		if err != nil {
			return err
		}
		return writeScript(ctx, r, args[2], n)
	case "claim":
		r, err := Open(ctx, opts)
		if err != nil {
			return err
		}
		release, err := r.Claim(args[2])
		if err != nil {
			return err
		}
		fmt.Println("claimed")
		io.Copy(io.Discard, os.Stdin)
		release()
		return nil
	}
	return fmt.Errorf("bad spec %q", spec)
}

// writeScript is one writer's share of a concurrency test: it creates tools
// PREFIX_0..n-1, gives every even one a second version, and deletes PREFIX_0.
// wantAfter says what must be left.
func writeScript(ctx context.Context, r *Registry, prefix string, n int) error {
	for i := range n {
		name := fmt.Sprintf("%s_%d", prefix, i)
		if _, err := r.Put(ctx, name, []byte(toolSource(name, "is version one.")), PutOptions{Origin: Generated, Category: prefix}); err != nil {
			return fmt.Errorf("put %s: %w", name, err)
		}
		if i%2 == 1 {
			prev := fmt.Sprintf("%s_%d", prefix, i-1)
			if _, err := r.Put(ctx, prev, []byte(toolSource(prev, "is version two.")), PutOptions{Origin: Generated}); err != nil {
				return fmt.Errorf("put %s again: %w", prev, err)
			}
		}
	}
	if _, err := r.Delete(ctx, prefix+"_0"); err != nil {
		return fmt.Errorf("delete %s_0: %w", prefix, err)
	}
	return nil
}

// wantAfter is what writeScript(prefix, n) leaves: each remaining tool's
// version and description.
func wantAfter(prefix string, n int) map[string]Entry {
	want := map[string]Entry{}
	for i := 1; i < n; i++ {
		e := Entry{Version: 1, Description: "Is version one.", Category: prefix}
		if i%2 == 0 && i+1 < n {
			e.Version, e.Description = 2, "Is version two."
		}
		want[fmt.Sprintf("%s_%d", prefix, i)] = e
	}
	return want
}

// checkAll asserts that exactly want is in the registry file, in a freshly
// opened Registry (serving, with its code) and in r, if r is not nil.
func checkAll(t *testing.T, f fixture, want map[string]Entry, r *Registry) {
	t.Helper()
	check := func(where string, got []Entry, serving func(string) bool) {
		t.Helper()
		seen := map[string]bool{}
		for _, e := range got {
			seen[e.Name] = true
			w, ok := want[e.Name]
			if !ok {
				t.Errorf("%s: unexpected entry %s (version %d): a deleted tool came back", where, e.Name, e.Version)
				continue
			}
			if e.Version != w.Version || e.Description != w.Description || e.Category != w.Category || e.Status != OK {
				t.Errorf("%s: %s = version %d %q category %q status %s; want version %d %q category %q",
					where, e.Name, e.Version, e.Description, e.Category, e.Status, w.Version, w.Description, w.Category)
			}
			if serving != nil && !serving(e.Name) {
				t.Errorf("%s: %s is listed but does not serve", where, e.Name)
			}
		}
		for name := range want {
			if !seen[name] {
				t.Errorf("%s: entry %s was lost", where, name)
			}
		}
	}
	entries, err := ReadEntries(f.path)
	if err != nil {
		t.Fatal(err)
	}
	check("tools_registry.json", entries, nil)
	fresh := f.open(t, nil)
	check("a fresh Registry", fresh.List(), func(name string) bool {
		tool, ok := fresh.Tool(name)
		return ok && hash(tool.Code) == tool.SHA256
	})
	if w := fresh.Warnings(); len(w) > 0 {
		t.Errorf("a fresh Registry warns: %q", w)
	}
	if r != nil {
		check("the long-running Registry", r.List(), func(name string) bool { _, ok := r.Tool(name); return ok })
	}
}

// helper starts a copy of the test binary as a helper process.
func helper(t *testing.T, spec string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+spec)
	return cmd
}

// TestConcurrentWritersInOtherProcesses is the server and the CLI at once:
// a long-running Registry that watches the folder (as the server's does) and
// writes, and two other processes writing through Registries of their own.
// No entry may be lost, and no deleted one may come back.
func TestConcurrentWritersInOtherProcesses(t *testing.T) {
	if !haveFlock {
		t.Skip("no cross-process lock on " + runtime.GOOS)
	}
	const n = 12
	f := newFixture(t)
	server := f.open(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan struct{})
	watched := make(chan error, 1)
	go func() { watched <- server.Watch(ctx, ready) }()
	<-ready

	type child struct {
		cmd    *exec.Cmd
		stderr strings.Builder
	}
	var children []*child
	for _, prefix := range []string{"cli_a", "cli_b"} {
		c := &child{cmd: helper(t, fmt.Sprintf("write %s %s %d", f.dir, prefix, n))}
		c.cmd.Stderr = &c.stderr
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, c)
	}
	serverErr := writeScript(t.Context(), server, "srv", n)
	for _, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("helper %v: %v\n%s", c.cmd.Env[len(c.cmd.Env)-1], err, c.stderr.String())
		}
	}
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	cancel()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	// Any write merges first; a Refresh is the smallest one.
	if err := server.Refresh(); err != nil {
		t.Fatal(err)
	}
	want := wantAfter("srv", n)
	for _, p := range []string{"cli_a", "cli_b"} {
		for k, v := range wantAfter(p, n) {
			want[k] = v
		}
	}
	checkAll(t, f, want, server)
}

// TestConcurrentRegistriesInOneProcess is the same race between Registry
// values of one process, each with its own in-process mutex: flock belongs
// to an open file description, and each lock opens the file afresh, so they
// exclude each other just as processes do. Under -race this also checks the
// Registry's own locking.
func TestConcurrentRegistriesInOneProcess(t *testing.T) {
	if !haveFlock {
		t.Skip("no cross-process lock on " + runtime.GOOS)
	}
	const n = 10
	f := newFixture(t)
	regs := []*Registry{f.open(t, nil), f.open(t, nil), f.open(t, nil)}
	var wg sync.WaitGroup
	errs := make([]error, len(regs))
	for i, r := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = writeScript(t.Context(), r, fmt.Sprintf("reg_%d", i), n)
		}()
	}
	wg.Wait()
	want := map[string]Entry{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		for k, v := range wantAfter(fmt.Sprintf("reg_%d", i), n) {
			want[k] = v
		}
	}
	if err := regs[0].Refresh(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, f, want, regs[0])
}

// TestFileLockExcludesAnotherOpen checks the property the tests above rely
// on: a second open of the lock file, in the same process, cannot take it.
func TestFileLockExcludesAnotherOpen(t *testing.T) {
	if !haveFlock {
		t.Skip("no flock on " + runtime.GOOS)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	release, err := lockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tryLockFile(path); !errors.Is(err, errLocked) {
		t.Fatalf("second lock while held: err = %v, want errLocked", err)
	}
	release()
	again, err := tryLockFile(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}

// TestMergeAnnouncesOtherProcessesChanges checks that a Registry learns, and
// tells its listeners, what another one saved, and that a save never brings
// back a tool the other deleted.
func TestMergeAnnouncesOtherProcessesChanges(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	server, cli := f.open(t, nil), f.open(t, nil)
	var mu sync.Mutex
	var got []string
	server.OnChange(func(ev Event) {
		mu.Lock()
		got = append(got, string(ev.Kind)+" "+ev.Entry.Name+" v"+strconv.Itoa(ev.Entry.Version))
		mu.Unlock()
	})
	if _, err := server.Put(ctx, "keep", []byte(toolSource("keep", "stays.")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "echo", []byte(toolSource("echo", "echoes.")), PutOptions{Category: "text"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "echo", []byte(toolSource("echo", "echoes twice.")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := server.Refresh(); err != nil {
		t.Fatal(err)
	}
	tool, ok := server.Tool("echo")
	if !ok || tool.Version != 2 || tool.Description != "Echoes twice." || tool.Category != "text" || hash(tool.Code) != tool.SHA256 {
		t.Fatalf("server's echo after the CLI's puts: ok=%v %+v", ok, tool.Entry)
	}
	// A version number continues across processes.
	e, err := server.Put(ctx, "echo", []byte(toolSource("echo", "echoes thrice.")), PutOptions{})
	if err != nil || e.Version != 3 {
		t.Fatalf("server's put after the CLI's: %+v, %v", e, err)
	}
	if _, err := cli.Delete(ctx, "echo"); err != nil {
		t.Fatalf("CLI delete of the server's version: %v", err)
	}
	// The server's next save must not write echo back.
	if _, err := server.Put(ctx, "other", []byte(toolSource("other", "is another.")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := server.Entry("echo"); ok {
		t.Error("the server still lists echo, which the CLI deleted")
	}
	entries, _ := ReadEntries(f.path)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "keep,other" {
		t.Errorf("registry lists %v, want keep,other", names)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "added keep v1|added echo v2|updated echo v3|removed echo v3|added other v1"
	if strings.Join(got, "|") != want {
		t.Errorf("server events:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// TestClaimAcrossProcesses: a name claimed by another process is busy here
// until that process lets it go.
func TestClaimAcrossProcesses(t *testing.T) {
	if !haveFlock {
		t.Skip("no flock on " + runtime.GOOS)
	}
	f := newFixture(t)
	r := f.open(t, nil)
	cmd := helper(t, "claim "+f.dir+" echo")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "claimed\n" {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("helper said %q, %v\n%s", line, err, stderr.String())
	}
	if _, err := r.Claim("echo"); !errors.Is(err, ErrBusy) {
		t.Errorf("claim of a name another process holds: err = %v, want ErrBusy", err)
	}
	other, err := r.Claim("upper")
	if err != nil {
		t.Errorf("claim of another name: %v", err)
	} else {
		other()
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, stderr.String())
	}
	release, err := r.Claim("echo")
	if err != nil {
		t.Fatalf("claim after the other process let go: %v", err)
	}
	release()
	if _, err := r.Claim("../x"); err == nil {
		t.Error("Claim accepted a name that escapes tools/")
	}
}

// TestLockFileInMissingFolder: the lock file does not stop a registry from
// being created where its folder does not exist yet, as before.
func TestLockFileInMissingFolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "new", "tools_registry.json")
	r, err := Open(context.Background(), Options{ToolsDir: filepath.Join(dir, "tools"), Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Put(context.Background(), "echo", []byte(toolSource("echo", "echoes.")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(LockFile(path)); err != nil {
		t.Errorf("lock file: %v", err)
	}
	if entries, err := ReadEntries(path); err != nil || len(entries) != 1 {
		t.Errorf("registry = %v, %v", entries, err)
	}
}

// TestLockFileWhereNoFolderCanBe: a registry path whose folder cannot exist
// fails with an error that names the lock file.
func TestLockFileWhereNoFolderCanBe(t *testing.T) {
	if !haveFlock {
		t.Skip("no lock file on " + runtime.GOOS)
	}
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(notDir, "tools_registry.json")
	_, err := Open(context.Background(), Options{ToolsDir: filepath.Join(dir, "tools"), Path: path})
	if err == nil || !strings.Contains(err.Error(), LockFile(path)) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Open err = %v; want one naming %s", err, LockFile(path))
	}
}

// TestReadOnlyRegistryFolder: where the lock file cannot be created because
// the folder is read-only, an up-to-date registry still opens (nothing needs
// saving), and a write fails before it writes anything, naming the lock file.
func TestReadOnlyRegistryFolder(t *testing.T) {
	if !haveFlock {
		t.Skip("no lock file on " + runtime.GOOS)
	}
	if os.Geteuid() == 0 {
		t.Skip("root may write a read-only folder")
	}
	dir := t.TempDir()
	regDir := filepath.Join(dir, "state")
	opts := Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(regDir, "tools_registry.json")}
	ctx := context.Background()
	r, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Put(ctx, "echo", []byte(toolSource("echo", "echoes.")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(LockFile(opts.Path)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(regDir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(regDir, 0o755) })

	ro, err := Open(ctx, opts)
	if err != nil {
		t.Fatalf("Open of an up-to-date registry in a read-only folder: %v", err)
	}
	if _, ok := ro.Tool("echo"); !ok {
		t.Fatal("echo does not serve")
	}
	_, err = ro.Put(ctx, "upper", []byte(toolSource("upper", "shouts.")), PutOptions{})
	t.Logf("Put: %v", err)
	if err == nil || !strings.Contains(err.Error(), LockFile(opts.Path)) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Put err = %v; want one naming %s", err, LockFile(opts.Path))
	}
	if _, err := os.Stat(filepath.Join(opts.ToolsDir, "upper")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Put wrote tools/upper (err %v)", err)
	}
	// A change that must be saved says why it cannot be.
	if err := os.WriteFile(filepath.Join(opts.ToolsDir, "echo", "echo.go"), []byte(toolSource("echo", "echoes, edited.")), 0o644); err != nil {
		t.Fatal(err)
	}
	err = ro.Sync(ctx, "echo")
	t.Logf("Sync: %v", err)
	if err == nil || !strings.Contains(err.Error(), "cannot save") || !strings.Contains(err.Error(), LockFile(opts.Path)) {
		t.Errorf("Sync err = %v; want cannot save, naming the lock file", err)
	}
}
