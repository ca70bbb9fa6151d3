package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

func init() {
	probes["seccomp-probe"] = func() { seccompProbe(false) }
	probes["seccomp-probe-confined"] = func() { seccompProbe(true) }
}

// The seccomp probe's inputs: a file it must still read, and the address of
// a loopback listener of the test's that it must still reach.
const (
	seccompFileEnv = "ADAPTBOT_SECCOMP_PROBE_FILE"
	seccompAddrEnv = "ADAPTBOT_SECCOMP_PROBE_ADDR"
)

// seccompSupported skips the test (fails it under
// ADAPTBOT_REQUIRE_LANDLOCK=1) where workers cannot install their filter.
func seccompSupported(t *testing.T) {
	t.Helper()
	if err := sandbox.SeccompSupport(); err != nil {
		if os.Getenv(requireLandlockEnv) == "1" {
			t.Fatalf("%s=1, but %v", requireLandlockEnv, err)
		}
		t.Skipf("no seccomp filter here: %v", err)
	}
}

// seccompReport is what the probe prints.
type seccompReport struct {
	Confinement sandbox.WorkerConfinement `json:"confinement"`
	PID         int                       `json:"pid"`
	TIDs        []int                     `json:"tids"`    // the threads the checks ran on
	Threads     []map[string]probeResult  `json:"threads"` // threadChecks, on each of them
	Process     map[string]probeResult    `json:"process"` // processChecks, once
	File        string                    `json:"file"`    // what it read of the allowed file
	Now         int64                     `json:"now"`     // time.Now, in Unix nanoseconds
}

// seccompProbe is the test binary started by TestSeccompFilter: it puts the
// seccomp filter on itself, alone or as a confined worker does (Landlock,
// starting over, then the filter), locks goroutines to many threads, most of
// them started after the filter, lets the test look at them, and tries from
// each what the filter must refuse and what a worker must still do.
func seccompProbe(confined bool) {
	var rep seccompReport
	if confined {
		conf, err := sandbox.ConfineWorker(sandbox.LandlockRequire)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		rep.Confinement = conf
	} else if err := sandbox.InstallSeccompFilter(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rep.PID = os.Getpid()
	file := os.Getenv(seccompFileEnv)

	// Goroutines locked to threads and held together are on as many
	// threads; far more than the process had, so most start now.
	n := 8 * runtime.GOMAXPROCS(0)
	rep.TIDs, rep.Threads = make([]int, n), make([]map[string]probeResult, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			rep.TIDs[i] = syscall.Gettid()
			ready.Done()
			<-start
			rep.Threads[i] = threadChecks(file)
		}()
	}
	ready.Wait()
	// The test looks at every thread's status now, and says when to go on.
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "waiting for the test:", err)
		os.Exit(1)
	}
	close(start)
	done.Wait()

	rep.Process = processChecks(os.Getenv(seccompAddrEnv))
	if b, err := os.ReadFile(file); err == nil {
		rep.File = string(b)
	}
	rep.Now = time.Now().UnixNano()
	json.NewEncoder(os.Stdout).Encode(rep) //nolint:errcheck
	os.Exit(0)
}

// missingPID is a process ID no process has (pid_max is at most 2^22).
const missingPID = 1 << 30

// threadChecks tries, on the calling thread, calls the filter refuses,
// each chosen so that, unfiltered, it fails otherwise (or succeeds) and
// changes nothing (TestSeccompFilter's control runs them unfiltered), and a
// few a worker needs.
func threadChecks(file string) map[string]probeResult {
	raw := func(name string, a1, a2, a3 uintptr) probeResult {
		_, _, errno := syscall.RawSyscall(sandbox.SeccompNumber(name), a1, a2, a3)
		if errno != 0 {
			return result(errno)
		}
		return probeResult{}
	}
	res := map[string]probeResult{
		// Unfiltered: ESRCH, no such process.
		"ptrace attach": result(syscall.PtraceAttach(missingPID)),
		// Unfiltered: ENOENT as root, EPERM otherwise.
		"mount": result(syscall.Mount("none", "/nonexistent/adaptbot-seccomp-probe", "tmpfs", 0, "")),
		// Unfiltered: EINVAL, as the process has threads.
		"unshare user namespace": result(syscall.Unshare(syscall.CLONE_NEWUSER)),
		// BPF_MAP_CREATE with no attributes. Unfiltered: EINVAL as root,
		// EPERM otherwise.
		"bpf": raw("bpf", 0, 0, 0),
		// Unfiltered: succeeds, saying the current persona.
		"personality query": raw("personality", 0xffffffff, 0, 0),
		// Unfiltered: EINVAL, no entries.
		"io_uring_setup": raw("io_uring_setup", 0, 0, 0),
		// Unfiltered: ENOENT.
		"execve missing file": execveMissing(),
		// Unfiltered: EINVAL, a null argument of size 0.
		"clone3": raw("clone3", 0, 0, 0),
		// CLONE_THREAD without CLONE_SIGHAND, which the kernel refuses
		// (EINVAL) before it creates anything: the filter must let it
		// through without a namespace flag, and refuse it with one.
		"clone thread":      raw("clone", syscall.CLONE_THREAD, 0, 0),
		"read allowed file": result(func() error { _, err := os.ReadFile(file); return err }()),
		"getpid":            result(pidMatches()),
	}
	for name, flag := range cloneNamespaceFlags {
		res["clone "+name] = raw("clone", syscall.CLONE_THREAD|flag, 0, 0)
	}
	return res
}

var cloneNamespaceFlags = map[string]uintptr{
	"CLONE_NEWNS": syscall.CLONE_NEWNS, "CLONE_NEWUTS": syscall.CLONE_NEWUTS, "CLONE_NEWIPC": syscall.CLONE_NEWIPC,
	"CLONE_NEWUSER": syscall.CLONE_NEWUSER, "CLONE_NEWPID": syscall.CLONE_NEWPID, "CLONE_NEWNET": syscall.CLONE_NEWNET,
	"CLONE_NEWCGROUP": syscall.CLONE_NEWCGROUP,
}

// execveMissing asks to run a file that does not exist.
func execveMissing() probeResult {
	path, err := syscall.BytePtrFromString("/nonexistent/adaptbot-seccomp-probe")
	if err != nil {
		return result(err)
	}
	_, _, errno := syscall.RawSyscall(sandbox.SeccompNumber("execve"), uintptr(unsafe.Pointer(path)), 0, 0)
	if errno != 0 {
		return result(errno)
	}
	return probeResult{}
}

func pidMatches() error {
	if os.Getpid() != syscall.Getpid() || os.Getpid() <= 0 {
		return errors.New("getpid disagrees")
	}
	return nil
}

// processChecks tries, once, what a worker does through packages: run a
// program (refused), reach the test's listener, resolve localhost, run
// goroutines.
func processChecks(addr string) map[string]probeResult {
	return map[string]probeResult{
		"run /bin/true": result(func() error {
			// Pipes, not /dev/null (which a confined worker may not
			// write), so that the exec itself is what is refused.
			cmd := exec.Command("/bin/true")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), io.Discard, io.Discard
			return cmd.Run()
		}()),
		"connect to the test": result(func() error {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return err
			}
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil && line != "hello\n" {
				err = fmt.Errorf("read %q", line)
			}
			return err
		}()),
		"resolve localhost": result(func() error {
			_, err := net.DefaultResolver.LookupHost(context.Background(), "localhost")
			return err
		}()),
		"goroutines": result(func() error {
			var wg sync.WaitGroup
			sums := make([]int, 100)
			for i := range sums {
				wg.Go(func() { sums[i] = i * i })
			}
			wg.Wait()
			if sums[99] != 99*99 {
				return errors.New("a goroutine did not run")
			}
			return nil
		}()),
	}
}

// threadStatus counts the threads of process pid that have the seccomp
// filter (Seccomp: 2, one filter more than the test has: a container may
// have its own) and no_new_privs, of all it has.
func threadStatus(t *testing.T, pid int) (filtered, all int, tids []int) {
	t.Helper()
	own, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	filters := "\nSeccomp_filters:\t" + strconv.Itoa(statusField(string(own), "Seccomp_filters")+1) + "\n"
	if !strings.Contains(string(own), "\nSeccomp_filters:") {
		filters = "" // older than Linux 5.9, which does not count them
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		status, err := os.ReadFile(filepath.Join(dir, e.Name(), "status"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		all++
		s := string(status)
		if strings.Contains(s, "\nSeccomp:\t2\n") && strings.Contains(s, filters) && strings.Contains(s, "\nNoNewPrivs:\t1\n") {
			filtered++
			var tid int
			fmt.Sscan(e.Name(), &tid) //nolint:errcheck
			tids = append(tids, tid)
		}
	}
	return filtered, all, tids
}

// statusField is the number a /proc status file gives name, 0 if none.
func statusField(status, name string) int {
	_, rest, ok := strings.Cut(status, "\n"+name+":\t")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\n")
	n, _ := strconv.Atoi(line)
	return n
}

// The outcomes the filter must give on every thread.
var seccompWant = map[string]syscall.Errno{
	"ptrace attach":          syscall.EPERM,
	"mount":                  syscall.EPERM,
	"unshare user namespace": syscall.EPERM,
	"bpf":                    syscall.EPERM,
	"personality query":      syscall.EPERM,
	"io_uring_setup":         syscall.EPERM,
	"execve missing file":    syscall.EPERM,
	"clone3":                 syscall.ENOSYS,
	"clone thread":           syscall.EINVAL, // let through: the kernel's refusal
	"read allowed file":      0,
	"getpid":                 0,
}

func init() {
	for name := range cloneNamespaceFlags {
		seccompWant["clone "+name] = syscall.EPERM
	}
}

// seccompUnfilteredDiffers are the checks whose outcome unfiltered differs
// from the filter's whatever the user's privileges: they prove it is the
// filter that refuses.
var seccompUnfilteredDiffers = []string{"ptrace attach", "unshare user namespace", "personality query",
	"io_uring_setup", "execve missing file", "clone3", "clone CLONE_NEWNS", "clone CLONE_NEWUTS",
	"clone CLONE_NEWIPC", "clone CLONE_NEWUSER", "clone CLONE_NEWPID", "clone CLONE_NEWNET", "clone CLONE_NEWCGROUP"}

// TestSeccompFilter proves the filter in a process of its own, past any
// interpreter: alone, and as a confined worker has it (Landlock first, the
// process starting over, then the filter). Every thread has it, those
// started after it too; on each, ptrace, mount, unshare, bpf, personality,
// io_uring, execve and clone with a namespace flag fail with EPERM and clone3
// with ENOSYS; running a program fails; files it may read, a loopback
// connection, DNS, goroutines and the clock still work. A control run of the
// same calls unfiltered, in the test process, shows the filter is what
// refuses them.
func TestSeccompFilter(t *testing.T) {
	seccompSupported(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n")) //nolint:errcheck
			c.Close()
		}
	}()

	t.Run("control", func(t *testing.T) {
		if status, err := os.ReadFile("/proc/self/status"); err != nil || !strings.Contains(string(status), "\nSeccomp:\t0\n") {
			t.Skip("the test runs under a seccomp filter of its own (a container's?): the control cannot tell the two apart")
		}
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		res := threadChecks("/nonexistent")
		for _, name := range seccompUnfilteredDiffers {
			if r := res[name]; r.Errno == int(seccompWant[name]) {
				t.Errorf("%s, unfiltered: %+v, the same as the filter's", name, r)
			}
		}
		t.Logf("unfiltered: %+v", res)
	})
	t.Run("alone", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "allowed")
		if err := os.WriteFile(file, []byte("allowed"), 0o600); err != nil {
			t.Fatal(err)
		}
		checkSeccompProbe(t, "seccomp-probe", file, ln.Addr().String())
	})
	t.Run("confined worker", func(t *testing.T) {
		abi := landlockABI(t)
		rep := checkSeccompProbe(t, "seccomp-probe-confined", "/etc/hosts", ln.Addr().String())
		if want := (sandbox.WorkerConfinement{Landlock: abi, Seccomp: true}); rep.Confinement != want {
			t.Errorf("confinement %+v, want %+v", rep.Confinement, want)
		}
	})
}

// checkSeccompProbe runs the probe as role, reading file, and checks its
// threads and report.
func checkSeccompProbe(t *testing.T, role, file, addr string) seccompReport {
	t.Helper()
	want, err := os.ReadFile(file)
	if err != nil {
		t.Skipf("no %s to read: %v", file, err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{workerEnvVar + "=" + role, seccompFileEnv + "=" + file, seccompAddrEnv + "=" + addr, "GORACE=atexit_sleep_ms=0"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // once it has exited, a no-op
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "ready\n" {
		cmd.Wait() //nolint:errcheck
		t.Fatalf("probe said %q, %v\n%s", line, err, stderr.String())
	}
	// Every thread, those the probe holds among them, has the filter.
	filtered, all, tids := threadStatus(t, cmd.Process.Pid)
	if filtered != all {
		t.Errorf("%d of the probe's %d threads have the filter and no_new_privs", filtered, all)
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(out)
	if werr := cmd.Wait(); werr != nil || err != nil {
		t.Fatalf("probe: %v, %v\n%s", werr, err, stderr.String())
	}
	var rep seccompReport
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("probe said %q: %v\n%s", body, err, stderr.String())
	}

	distinct := slices.Compact(slices.Sorted(slices.Values(rep.TIDs)))
	if len(distinct) != len(rep.TIDs) {
		t.Errorf("the checks ran on %d threads, not %d", len(distinct), len(rep.TIDs))
	}
	for _, tid := range rep.TIDs {
		if !slices.Contains(tids, tid) {
			t.Errorf("thread %d has no filter (filtered: %v)", tid, tids)
		}
	}
	for i, res := range rep.Threads {
		for name, errno := range seccompWant {
			if r, ok := res[name]; !ok || r.Errno != int(errno) || (errno == 0 && r.Err != "") {
				t.Errorf("thread %d, %s: %+v, want %v", rep.TIDs[i], name, r, errnoString(errno))
			}
		}
	}
	if r := rep.Process["run /bin/true"]; r.Errno != int(syscall.EPERM) {
		t.Errorf("run /bin/true: %+v, want EPERM", r)
	}
	for _, name := range []string{"connect to the test", "resolve localhost", "goroutines"} {
		if r, ok := rep.Process[name]; !ok || r.Err != "" {
			t.Errorf("%s: %+v, want success", name, r)
		}
	}
	if rep.File != string(want) {
		t.Errorf("read %q of %s, want %q", rep.File, file, want)
	}
	if rep.PID != cmd.Process.Pid || rep.Now <= 0 {
		t.Errorf("pid %d (want %d), time %d", rep.PID, cmd.Process.Pid, rep.Now)
	}
	t.Logf("%d threads, all filtered; on each: %+v; once: %+v", all, rep.Threads[0], rep.Process)
	return rep
}

func errnoString(e syscall.Errno) string {
	if e == 0 {
		return "success"
	}
	return e.Error()
}

// TestSeccompPoolWorkers runs tools through a real pool of workers confined
// by Landlock and the filter: every thread of every worker has the filter,
// Stats says so, and toolkit HTTP and the shipped current_time tool still
// work, with no worker lost on the way.
func TestSeccompPoolWorkers(t *testing.T) {
	abi := landlockABI(t)
	seccompSupported(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from loopback") }))
	defer srv.Close()
	opts := testOptions(t)
	opts.Landlock = sandbox.LandlockRequire
	opts.Toolkit.Policy = toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	p := newPool(t, opts)
	s := p.Stats()
	if !s.Confined || !s.Seccomp || s.Confinement != fmt.Sprintf("Landlock ABI %d, seccomp", abi) {
		t.Fatalf("stats: confined %v, seccomp %v, %q", s.Confined, s.Seccomp, s.Confinement)
	}
	for _, pid := range s.PIDs {
		if filtered, all, _ := threadStatus(t, pid); filtered != all || all == 0 {
			t.Errorf("worker %d: %d of %d threads have the filter and no_new_privs", pid, filtered, all)
		}
	}

	res, err := run(t, p, "fetcher", fetcher, fmt.Sprintf(`{"url":%q}`, srv.URL))
	if err != nil || res.Output != "hello from loopback" {
		t.Errorf("toolkit HTTP from a filtered worker: %q, %v", res.Output, err)
	}
	src, err := os.ReadFile("../tools/current_time/current_time.go")
	if err != nil {
		t.Fatal(err)
	}
	res, err = run(t, p, "current_time", string(src), `{"timezone":"Europe/Paris"}`)
	if err != nil || !strings.Contains(res.Output, `"timezone":"Europe/Paris"`) {
		t.Errorf("current_time in a filtered worker: %q, %v", res.Output, err)
	}
	after := waitFull(t, p)
	if after.Restarts != 0 || !after.Seccomp || !slices.Equal(slices.Sorted(slices.Values(after.PIDs)), slices.Sorted(slices.Values(s.PIDs))) {
		t.Errorf("workers replaced: before %+v, after %+v", s, after)
	}
}

// TestSeccompRequired: with require, the pool refuses a worker that says it
// is confined by Landlock but has no filter.
func TestSeccompRequired(t *testing.T) {
	landlockABI(t)
	seccompSupported(t)
	opts := testOptions(t)
	opts.PoolSize = 1
	opts.Landlock = sandbox.LandlockRequire
	opts.WorkerEnv = []string{workerEnvVar + "=landlock-only-hello"}
	_, err := sandbox.NewPool(opts)
	if err == nil || !strings.Contains(err.Error(), "worker is Landlock ABI 1, no seccomp filter: said so, and the seccomp filter is required") {
		t.Errorf("require with a worker without the filter: %v", err)
	}
}
