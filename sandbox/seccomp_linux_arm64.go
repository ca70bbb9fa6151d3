package sandbox

// The seccomp filter's view of arm64 (include/uapi/asm-generic/unistd.h; the
// values are golang.org/x/sys/unix's, since package syscall lacks the newer
// ones).
const (
	seccompAuditArch = 0xc00000b7 // AUDIT_ARCH_AARCH64
	// seccompX32Bit is amd64's alone: arm64's 32-bit calls (AArch32) have
	// an audit architecture of their own, which the filter kills.
	seccompX32Bit = 0
	sysSeccomp    = 277
)

// seccompNumbers numbers every system call seccompDenied names that arm64
// has (not iopl, ioperm or modify_ldt, which are x86's), and clone and
// clone3, which the filter handles apart.
var seccompNumbers = map[string]uint32{
	"ptrace":            117,
	"process_vm_readv":  270,
	"process_vm_writev": 271,
	"pidfd_getfd":       438,
	"process_madvise":   440,
	"kcmp":              272,
	"execve":            221,
	"execveat":          281,
	"init_module":       105,
	"finit_module":      273,
	"delete_module":     106,
	"kexec_load":        104,
	"kexec_file_load":   294,
	"reboot":            142,
	"swapon":            224,
	"swapoff":           225,
	"acct":              89,
	"quotactl":          60,
	"quotactl_fd":       443,
	"settimeofday":      170,
	"clock_settime":     112,
	"clock_adjtime":     266,
	"adjtimex":          171,
	"sethostname":       161,
	"setdomainname":     162,
	"syslog":            116,
	"lookup_dcookie":    18,
	"mount":             40,
	"umount2":           39,
	"pivot_root":        41,
	"chroot":            51,
	"open_tree":         428,
	"move_mount":        429,
	"fsopen":            430,
	"fsconfig":          431,
	"fsmount":           432,
	"fspick":            433,
	"mount_setattr":     442,
	"open_by_handle_at": 265,
	"name_to_handle_at": 264,
	"fanotify_init":     262,
	"unshare":           97,
	"setns":             268,
	"bpf":               280,
	"perf_event_open":   241,
	"userfaultfd":       282,
	"io_uring_setup":    425,
	"io_uring_enter":    426,
	"io_uring_register": 427,
	"keyctl":            219,
	"add_key":           217,
	"request_key":       218,
	"personality":       92,
	"clone":             220,
	"clone3":            435,
}
