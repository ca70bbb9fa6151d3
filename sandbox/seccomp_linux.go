package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// seccompDenied are the system calls a worker's filter refuses with EPERM:
// none is of use to a tool (whose only ways out are the toolkit's HTTP and
// the few files Landlock leaves it), and each is what an escape, past the
// interpreter's symbol table and Landlock, would reach for next. A denylist,
// not an allowlist: the Go runtime, the race detector and the C library
// change the calls they make from version to version, and a call an
// allowlist forgot would kill a worker at random. clone and clone3 are
// handled apart (buildSeccompFilter).
var seccompDenied = []string{
	// Other processes: reading or writing their memory, taking their file
	// descriptors, comparing their kernel objects. (Landlock already keeps
	// ptrace within the worker; this is the wall behind it.)
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp",
	// Running a program. The worker has started over (the one execve it
	// needs) before it installs the filter, and neither the Go runtime nor
	// the race detector runs anything afterwards.
	"execve", "execveat",
	// The kernel and the machine: loading modules or another kernel,
	// rebooting, swap, process accounting, quotas, the clock, the host's
	// names, the kernel log, profiling cookies, x86 I/O ports and
	// segment tables.
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
	"syslog", "lookup_dcookie", "iopl", "ioperm", "modify_ldt",
	// The file system's shape: mounts (the old call and the new API),
	// changing root, and file handles, which open a file by its inode past
	// every path check (the "shocker" container escape); fanotify, which
	// watches or blocks other processes' file access.
	"mount", "umount2", "pivot_root", "chroot",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"open_by_handle_at", "name_to_handle_at", "fanotify_init",
	// Namespaces: a new user namespace hands a process every capability
	// inside it, and with them the kernel's least-tested code (netfilter,
	// mounts of odd file systems); entering one is no better. clone's
	// namespace flags are refused too.
	"unshare", "setns",
	// Kernel interfaces behind many privilege escalations: eBPF, perf
	// events, userfaultfd (which holds a fault open to widen a race),
	// io_uring (whose queued operations no seccomp filter sees), and the
	// key store.
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	// personality: turns off address space randomisation or makes data
	// executable, for an exploit's benefit.
	"personality",
}

// seccompX86Only names the calls of seccompDenied that only x86 has.
var seccompX86Only = map[string]bool{"iopl": true, "ioperm": true, "modify_ldt": true}

// cloneNamespaces are clone's flags that make a new namespace. All are in
// the low 32 bits of its first argument, which is the flags on amd64 and
// arm64 both (and the kernel reads no more of it). (Go's runtime starts threads with CLONE_VM, CLONE_FS,
// CLONE_FILES, CLONE_SIGHAND, CLONE_SYSVSEM and CLONE_THREAD; the C
// library adds the TLS and thread ID flags; os/exec uses CLONE_VFORK,
// CLONE_VM and CLONE_PIDFD: none of these.)
const cloneNamespaces = syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC |
	syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWCGROUP

// Classic BPF (include/uapi/linux/filter.h and bpf_common.h): the few
// instruction classes a seccomp filter uses.
const (
	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS: A = 32 bits of seccomp_data at k
	bpfJeq    = 0x15 // BPF_JMP | BPF_JEQ | BPF_K: A == k
	bpfJge    = 0x35 // BPF_JMP | BPF_JGE | BPF_K: A >= k, unsigned
	bpfJset   = 0x45 // BPF_JMP | BPF_JSET | BPF_K: A & k != 0
	bpfRet    = 0x06 // BPF_RET | BPF_K: return k
)

// Offsets in struct seccomp_data: nr (int), arch (u32), instruction_pointer
// (u64), args (u64 each). seccompDataArg0Low is the low half of the first
// argument on a little-endian machine, as amd64 and arm64 are.
const (
	seccompDataNr      = 0
	seccompDataArch    = 4
	seccompDataArg0Low = 16
)

// seccomp(2) (include/uapi/linux/seccomp.h).
const (
	seccompSetModeFilter   = 1
	seccompGetActionAvail  = 2
	seccompFilterFlagTsync = 1

	seccompRetKillProcess = 0x80000000
	seccompRetErrno       = 0x00050000 // | errno in the low 16 bits
	seccompRetAllow       = 0x7fff0000
)

// sockFilter is struct sock_filter, one classic BPF instruction.
type sockFilter struct {
	code uint16
	jt   uint8 // instructions to skip when a jump's test holds
	jf   uint8 // and when it does not
	k    uint32
}

// sockFprog is struct sock_fprog; Go's alignment puts filter at offset 8,
// as the C compiler does.
type sockFprog struct {
	len    uint16
	filter *sockFilter
}

func stmt(code uint16, k uint32) sockFilter { return sockFilter{code: code, k: k} }

func jump(code uint16, k uint32, jt, jf uint8) sockFilter {
	return sockFilter{code: code, jt: jt, jf: jf, k: k}
}

// seccompFilter is the worker's filter for this architecture, built once;
// errSeccompFilter says why there is none.
var seccompFilter, errSeccompFilter = buildSeccompFilter()

// buildSeccompFilter writes the filter: kill a call made for another
// architecture, refuse seccompDenied with EPERM, clone3 with ENOSYS and clone
// with a namespace flag with EPERM, allow the rest. It costs the calls it
// allows next to nothing: the kernel (5.11 and later) works out, as it
// installs the filter, which calls it allows whatever their arguments (all
// but clone) and skips it for them.
func buildSeccompFilter() ([]sockFilter, error) {
	if seccompAuditArch == 0 {
		return nil, fmt.Errorf("there is no seccomp filter for %s (only for amd64 and arm64)", runtime.GOARCH)
	}
	nr := func(name string) (uint32, error) {
		n, ok := seccompNumbers[name]
		if !ok {
			return 0, fmt.Errorf("seccomp filter: no number for %s on %s", name, runtime.GOARCH)
		}
		return n, nil
	}
	prog := []sockFilter{
		// System call numbers differ by architecture, so a call made for
		// another one (int 0x80 on amd64, AArch32 on arm64) would slip past
		// the list: kill the process.
		stmt(bpfLdWAbs, seccompDataArch),
		jump(bpfJeq, seccompAuditArch, 1, 0),
		stmt(bpfRet, seccompRetKillProcess),
		// From here on the accumulator holds the system call number.
		stmt(bpfLdWAbs, seccompDataNr),
	}
	if seccompX32Bit != 0 {
		// amd64's x32 calls: the same architecture, another table.
		prog = append(prog,
			jump(bpfJge, seccompX32Bit, 0, 1),
			stmt(bpfRet, seccompRetKillProcess))
	}
	for _, name := range seccompDenied {
		if seccompX86Only[name] && runtime.GOARCH != "amd64" {
			continue // not on this architecture
		}
		n, err := nr(name)
		if err != nil {
			return nil, err
		}
		prog = append(prog,
			jump(bpfJeq, n, 0, 1),
			stmt(bpfRet, seccompRetErrno|uint32(syscall.EPERM)))
	}
	clone, err := nr("clone")
	if err != nil {
		return nil, err
	}
	clone3, err := nr("clone3")
	if err != nil {
		return nil, err
	}
	return append(prog,
		// clone3 passes its flags in memory, which a filter cannot read:
		// answer as a kernel without it would, so that the C library falls
		// back to clone (glibc does on ENOSYS, and only on that). Go's
		// runtime never calls it, nor package syscall unless asked for a
		// cgroup or a time namespace.
		jump(bpfJeq, clone3, 0, 1),
		stmt(bpfRet, seccompRetErrno|uint32(syscall.ENOSYS)),
		// clone: a new thread or process passes, a new namespace does not.
		// (Anything but clone jumps straight to the last instruction.)
		jump(bpfJeq, clone, 0, 3),
		stmt(bpfLdWAbs, seccompDataArg0Low),
		jump(bpfJset, cloneNamespaces, 0, 1),
		stmt(bpfRet, seccompRetErrno|uint32(syscall.EPERM)),
		// Everything else.
		stmt(bpfRet, seccompRetAllow),
	), nil
}

// seccompSupport says whether the kernel takes the filter: seccomp filters
// and the two actions it returns besides allowing (both from Linux 4.14,
// older than any kernel with Landlock).
func seccompSupport() error {
	if errSeccompFilter != nil {
		return errSeccompFilter
	}
	for _, action := range []uint32{seccompRetKillProcess, seccompRetErrno} {
		_, _, errno := syscall.Syscall(sysSeccomp, seccompGetActionAvail, 0, uintptr(unsafe.Pointer(&action)))
		switch errno {
		case 0:
			continue
		case syscall.ENOSYS:
			return errors.New("this kernel has no seccomp (ENOSYS: built without it, or a container's own filter hides it)")
		case syscall.EINVAL:
			return errors.New("this kernel has no seccomp filters (EINVAL: built without CONFIG_SECCOMP_FILTER, or older than Linux 4.14)")
		case syscall.EOPNOTSUPP:
			return fmt.Errorf("this kernel lacks the seccomp action %#x (EOPNOTSUPP: older than Linux 4.14)", action)
		}
		return fmt.Errorf("cannot use seccomp: seccomp(SECCOMP_GET_ACTION_AVAIL): %w", errno)
	}
	return nil
}

// installSeccomp puts seccompFilter on every thread of the process at once
// (SECCOMP_FILTER_FLAG_TSYNC): a filter, like Landlock, binds only the
// thread that installs it otherwise, but unlike Landlock the kernel can
// spread it, so no start-over is needed. Threads started later inherit it.
// It cannot be removed.
func installSeccomp() error {
	if err := seccompSupport(); err != nil {
		return err
	}
	prog := sockFprog{len: uint16(len(seccompFilter)), filter: &seccompFilter[0]}
	// The kernel takes a filter from a thread without privileges only if
	// it has no_new_privs (inherited already in a worker that started
	// over), and with TSYNC sets it on every other thread too. Both calls
	// must come from the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("set no_new_privs: %w", errno)
	}
	tid, _, errno := syscall.Syscall(sysSeccomp, seccompSetModeFilter, seccompFilterFlagTsync, uintptr(unsafe.Pointer(&prog)))
	switch {
	case errno != 0:
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	case tid != 0:
		// TSYNC names the thread it could not synchronise: one with a
		// filter of its own, which no worker installs.
		return fmt.Errorf("seccomp: thread %d could not take the filter", tid)
	}
	return nil
}
