package sandbox

// The seccomp filter's view of amd64 (arch/x86/entry/syscalls/syscall_64.tbl;
// the values are golang.org/x/sys/unix's, since package syscall lacks the
// newer ones).
const (
	seccompAuditArch = 0xc000003e // AUDIT_ARCH_X86_64
	// seccompX32Bit flags a call of the x32 ABI: amd64's audit
	// architecture, but another system call table, which the filter kills.
	seccompX32Bit = 0x40000000 // __X32_SYSCALL_BIT
	sysSeccomp    = 317
)

// seccompNumbers numbers every system call seccompDenied names, and clone
// and clone3, which the filter handles apart.
var seccompNumbers = map[string]uint32{
	"ptrace":            101,
	"process_vm_readv":  310,
	"process_vm_writev": 311,
	"pidfd_getfd":       438,
	"process_madvise":   440,
	"kcmp":              312,
	"execve":            59,
	"execveat":          322,
	"init_module":       175,
	"finit_module":      313,
	"delete_module":     176,
	"kexec_load":        246,
	"kexec_file_load":   320,
	"reboot":            169,
	"swapon":            167,
	"swapoff":           168,
	"acct":              163,
	"quotactl":          179,
	"quotactl_fd":       443,
	"settimeofday":      164,
	"clock_settime":     227,
	"clock_adjtime":     305,
	"adjtimex":          159,
	"sethostname":       170,
	"setdomainname":     171,
	"syslog":            103,
	"lookup_dcookie":    212,
	"iopl":              172,
	"ioperm":            173,
	"modify_ldt":        154,
	"mount":             165,
	"umount2":           166,
	"pivot_root":        155,
	"chroot":            161,
	"open_tree":         428,
	"move_mount":        429,
	"fsopen":            430,
	"fsconfig":          431,
	"fsmount":           432,
	"fspick":            433,
	"mount_setattr":     442,
	"open_by_handle_at": 304,
	"name_to_handle_at": 303,
	"fanotify_init":     300,
	"unshare":           272,
	"setns":             308,
	"bpf":               321,
	"perf_event_open":   298,
	"userfaultfd":       323,
	"io_uring_setup":    425,
	"io_uring_enter":    426,
	"io_uring_register": 427,
	"keyctl":            250,
	"add_key":           248,
	"request_key":       249,
	"personality":       135,
	"clone":             56,
	"clone3":            435,
}
