package sandbox

import (
	"encoding/binary"
	"runtime"
	"slices"
	"syscall"
	"testing"
)

// runFilter runs prog as the kernel would on a call of system call nr, made
// for the audit architecture arch, whose first argument is arg0, and returns
// the action it decides.
func runFilter(t *testing.T, prog []sockFilter, arch, nr uint32, arg0 uint64) uint32 {
	t.Helper()
	var data [64]byte // struct seccomp_data
	binary.LittleEndian.PutUint32(data[seccompDataNr:], nr)
	binary.LittleEndian.PutUint32(data[seccompDataArch:], arch)
	binary.LittleEndian.PutUint64(data[16:], arg0)
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		cond := false
		switch in.code {
		case bpfLdWAbs:
			if in.k%4 != 0 || in.k+4 > uint32(len(data)) {
				t.Fatalf("instruction %d loads from offset %d", pc, in.k)
			}
			a = binary.LittleEndian.Uint32(data[in.k:])
			continue
		case bpfRet:
			return in.k
		case bpfJeq:
			cond = a == in.k
		case bpfJge:
			cond = a >= in.k
		case bpfJset:
			cond = a&in.k != 0
		default:
			t.Fatalf("instruction %d has code %#x, which the test does not know", pc, in.code)
		}
		if cond {
			pc += int(in.jt)
		} else {
			pc += int(in.jf)
		}
	}
	t.Fatalf("the filter ran off its end on call %d", nr)
	return 0
}

func filterOrSkip(t *testing.T) []sockFilter {
	t.Helper()
	if errSeccompFilter != nil {
		t.Skipf("no filter here: %v", errSeccompFilter)
	}
	return seccompFilter
}

// TestSeccompFilterShape checks what the kernel would refuse to load: an
// empty or overlong program, a jump past the end, a last instruction that
// does not return.
func TestSeccompFilterShape(t *testing.T) {
	prog := filterOrSkip(t)
	if len(prog) == 0 || len(prog) > 4096 { // BPF_MAXINSNS
		t.Fatalf("%d instructions", len(prog))
	}
	for pc, in := range prog {
		if in.code&0x07 == 0x05 { // BPF_JMP
			if end := pc + 1 + int(max(in.jt, in.jf)); end >= len(prog) {
				t.Errorf("instruction %d jumps to %d, past the end (%d)", pc, end, len(prog))
			}
		}
	}
	if last := prog[len(prog)-1]; last.code != bpfRet || last.k != seccompRetAllow {
		t.Errorf("last instruction %+v, want return ALLOW", last)
	}
	t.Logf("%d instructions, %d system calls refused", len(prog), len(seccompDenied))
}

// TestSeccompFilterDecisions runs the filter, in Go, on the calls it must
// refuse and on those a worker makes all the time.
func TestSeccompFilterDecisions(t *testing.T) {
	prog := filterOrSkip(t)
	const eperm, enosys = seccompRetErrno | uint32(syscall.EPERM), seccompRetErrno | uint32(syscall.ENOSYS)
	decide := func(nr uint32, arg0 uint64) uint32 { return runFilter(t, prog, seccompAuditArch, nr, arg0) }

	// What the filter exists for; removing one from seccompDenied must be
	// deliberate.
	required := []string{"ptrace", "process_vm_readv", "process_vm_writev", "kexec_load", "kexec_file_load",
		"init_module", "finit_module", "delete_module", "mount", "umount2", "pivot_root", "chroot",
		"swapon", "swapoff", "reboot", "setns", "unshare", "bpf", "perf_event_open", "userfaultfd",
		"keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at",
		"io_uring_setup", "io_uring_enter", "io_uring_register", "quotactl", "acct",
		"settimeofday", "clock_settime", "adjtimex", "sethostname", "setdomainname",
		"lookup_dcookie", "fanotify_init", "syslog", "personality", "execve", "execveat"}
	if runtime.GOARCH == "amd64" {
		required = append(required, "iopl", "ioperm")
	}
	for _, name := range required {
		if !slices.Contains(seccompDenied, name) {
			t.Errorf("%s is not in seccompDenied", name)
		}
	}
	for _, name := range seccompDenied {
		nr, ok := seccompNumbers[name]
		if !ok {
			if !seccompX86Only[name] || runtime.GOARCH == "amd64" {
				t.Errorf("no number for %s", name)
			}
			continue
		}
		if got := decide(nr, 0); got != eperm {
			t.Errorf("%s (%d): action %#x, want ERRNO(EPERM)", name, nr, got)
		}
	}

	// The calls of a worker: Go's runtime, its network poller, files,
	// sockets, signals, and seccomp and Landlock themselves (which only
	// narrow).
	for name, nr := range map[string]uintptr{
		"read": syscall.SYS_READ, "write": syscall.SYS_WRITE, "openat": syscall.SYS_OPENAT,
		"close": syscall.SYS_CLOSE, "mmap": syscall.SYS_MMAP, "munmap": syscall.SYS_MUNMAP,
		"madvise": syscall.SYS_MADVISE, "futex": syscall.SYS_FUTEX, "epoll_pwait": syscall.SYS_EPOLL_PWAIT,
		"clock_gettime": syscall.SYS_CLOCK_GETTIME, "nanosleep": syscall.SYS_NANOSLEEP,
		"getpid": syscall.SYS_GETPID, "gettid": syscall.SYS_GETTID, "tgkill": syscall.SYS_TGKILL,
		"rt_sigaction": syscall.SYS_RT_SIGACTION, "rt_sigprocmask": syscall.SYS_RT_SIGPROCMASK,
		"sigaltstack": syscall.SYS_SIGALTSTACK, "sched_yield": syscall.SYS_SCHED_YIELD,
		"sched_getaffinity": syscall.SYS_SCHED_GETAFFINITY, "socket": syscall.SYS_SOCKET,
		"connect": syscall.SYS_CONNECT, "getsockopt": syscall.SYS_GETSOCKOPT, "prctl": syscall.SYS_PRCTL,
		"exit_group": syscall.SYS_EXIT_GROUP, "seccomp": sysSeccomp,
		"landlock_restrict_self": sysLandlockRestrictSelf,
	} {
		if got := decide(uint32(nr), 0); got != seccompRetAllow {
			t.Errorf("%s (%d): action %#x, want ALLOW", name, nr, got)
		}
	}

	// clone: threads and processes pass, namespaces do not; clone3 is
	// "not implemented".
	clone := seccompNumbers["clone"]
	for name, flags := range map[string]uint64{
		"Go's threads": syscall.CLONE_VM | syscall.CLONE_FS | syscall.CLONE_FILES | syscall.CLONE_SIGHAND |
			syscall.CLONE_SYSVSEM | syscall.CLONE_THREAD,
		"glibc's threads": syscall.CLONE_VM | syscall.CLONE_FS | syscall.CLONE_FILES | syscall.CLONE_SIGHAND |
			syscall.CLONE_THREAD | syscall.CLONE_SYSVSEM | syscall.CLONE_SETTLS | syscall.CLONE_PARENT_SETTID |
			syscall.CLONE_CHILD_CLEARTID,
		"os/exec":           syscall.CLONE_VFORK | syscall.CLONE_VM | syscall.CLONE_PIDFD | uint64(syscall.SIGCHLD),
		"fork":              uint64(syscall.SIGCHLD),
		"high bits ignored": 1 << 40, // the kernel reads only the low 32 bits of clone's flags
	} {
		if got := decide(clone, flags); got != seccompRetAllow {
			t.Errorf("clone for %s (%#x): action %#x, want ALLOW", name, flags, got)
		}
	}
	for name, flag := range map[string]uint64{
		"CLONE_NEWNS": syscall.CLONE_NEWNS, "CLONE_NEWUTS": syscall.CLONE_NEWUTS, "CLONE_NEWIPC": syscall.CLONE_NEWIPC,
		"CLONE_NEWUSER": syscall.CLONE_NEWUSER, "CLONE_NEWPID": syscall.CLONE_NEWPID, "CLONE_NEWNET": syscall.CLONE_NEWNET,
		"CLONE_NEWCGROUP": syscall.CLONE_NEWCGROUP,
	} {
		for _, flags := range []uint64{flag, flag | uint64(syscall.SIGCHLD), flag | syscall.CLONE_VM | syscall.CLONE_THREAD | syscall.CLONE_SIGHAND} {
			if got := decide(clone, flags); got != eperm {
				t.Errorf("clone with %s (%#x): action %#x, want ERRNO(EPERM)", name, flags, got)
			}
		}
	}
	if got := decide(seccompNumbers["clone3"], 0); got != enosys {
		t.Errorf("clone3: action %#x, want ERRNO(ENOSYS)", got)
	}

	// Calls made for another architecture are killed, whatever they are.
	for _, arch := range []uint32{0x40000003 /* i386 */, 0x40000028 /* arm */, 0xc00000b7 /* aarch64 */, 0xc000003e /* x86_64 */} {
		if arch == seccompAuditArch {
			continue
		}
		if got := runFilter(t, prog, arch, uint32(syscall.SYS_GETPID), 0); got != seccompRetKillProcess {
			t.Errorf("getpid for arch %#x: action %#x, want KILL_PROCESS", arch, got)
		}
	}
	if seccompX32Bit != 0 {
		if got := decide(seccompX32Bit|uint32(syscall.SYS_GETPID), 0); got != seccompRetKillProcess {
			t.Errorf("x32 getpid: action %#x, want KILL_PROCESS", got)
		}
	}
}

// TestSeccompNumbers checks the filter's system call numbers against
// package syscall's, for the calls it has on amd64 and arm64 both (it lacks
// the newer ones; golang.org/x/sys/unix's agree with the rest).
func TestSeccompNumbers(t *testing.T) {
	if errSeccompFilter != nil {
		t.Skipf("no filter here: %v", errSeccompFilter)
	}
	for name, want := range map[string]uintptr{
		"ptrace": syscall.SYS_PTRACE, "execve": syscall.SYS_EXECVE, "mount": syscall.SYS_MOUNT,
		"umount2": syscall.SYS_UMOUNT2, "pivot_root": syscall.SYS_PIVOT_ROOT, "chroot": syscall.SYS_CHROOT,
		"init_module": syscall.SYS_INIT_MODULE, "delete_module": syscall.SYS_DELETE_MODULE,
		"kexec_load": syscall.SYS_KEXEC_LOAD, "reboot": syscall.SYS_REBOOT,
		"swapon": syscall.SYS_SWAPON, "swapoff": syscall.SYS_SWAPOFF, "acct": syscall.SYS_ACCT,
		"quotactl": syscall.SYS_QUOTACTL, "settimeofday": syscall.SYS_SETTIMEOFDAY,
		"clock_settime": syscall.SYS_CLOCK_SETTIME, "adjtimex": syscall.SYS_ADJTIMEX,
		"sethostname": syscall.SYS_SETHOSTNAME, "setdomainname": syscall.SYS_SETDOMAINNAME,
		"syslog": syscall.SYS_SYSLOG, "lookup_dcookie": syscall.SYS_LOOKUP_DCOOKIE,
		"unshare": syscall.SYS_UNSHARE, "keyctl": syscall.SYS_KEYCTL, "add_key": syscall.SYS_ADD_KEY,
		"request_key": syscall.SYS_REQUEST_KEY, "personality": syscall.SYS_PERSONALITY,
		"perf_event_open": syscall.SYS_PERF_EVENT_OPEN, "fanotify_init": syscall.SYS_FANOTIFY_INIT,
		"clone": syscall.SYS_CLONE,
	} {
		if got := seccompNumbers[name]; uintptr(got) != want {
			t.Errorf("%s: the filter says %d, package syscall %d", name, got, want)
		}
	}
}
