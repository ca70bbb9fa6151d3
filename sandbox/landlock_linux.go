package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Landlock's system calls are numbered 444 to 446 on every architecture Go
// runs on under Linux but MIPS, which counts from 4000 (32-bit) or 5000
// (64-bit). Package syscall names neither them nor O_PATH (whose value is
// the same on all of them); the values are golang.org/x/sys/unix's.
var (
	sysLandlockBase          = map[string]uintptr{"mips": 4000, "mipsle": 4000, "mips64": 5000, "mips64le": 5000}[runtime.GOARCH]
	sysLandlockCreateRuleset = sysLandlockBase + 444
	sysLandlockAddRule       = sysLandlockBase + 445
	sysLandlockRestrictSelf  = sysLandlockBase + 446
)

const (
	landlockCreateRulesetVersion = 1 << 0
	landlockRulePathBeneath      = 1

	prSetNoNewPrivs = 38
	oPath           = 0x200000
)

// Landlock access rights (include/uapi/linux/landlock.h), with the ABI
// version that introduced each.
const (
	accessExecute    = 1 << 0 // ABI 1
	accessWriteFile  = 1 << 1
	accessReadFile   = 1 << 2
	accessReadDir    = 1 << 3
	accessRemoveDir  = 1 << 4
	accessRemoveFile = 1 << 5
	accessMakeChar   = 1 << 6
	accessMakeDir    = 1 << 7
	accessMakeReg    = 1 << 8
	accessMakeSock   = 1 << 9
	accessMakeFifo   = 1 << 10
	accessMakeBlock  = 1 << 11
	accessMakeSym    = 1 << 12
	accessRefer      = 1 << 13 // ABI 2: link or rename across folders
	accessTruncate   = 1 << 14 // ABI 3
	accessIoctlDev   = 1 << 15 // ABI 5: ioctl on devices

	// The rights a rule on a file, not a folder, may grant.
	accessFileRights = accessExecute | accessWriteFile | accessReadFile | accessTruncate | accessIoctlDev

	scopeAbstractUnixSocket = 1 << 0 // ABI 6: connect to abstract sockets outside the domain
	scopeSignal             = 1 << 1 // ABI 6: signal processes outside the domain
)

// landlockRulesetAttr is struct landlock_ruleset_attr. The kernel accepts it
// whole from every ABI on, as long as what it does not know is zero.
type landlockRulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64 // ABI 4; never set: the network is the egress policy's
	scoped           uint64 // ABI 6
}

// landlockPathBeneathAttr is struct landlock_path_beneath_attr, which is
// packed: the kernel reads its first 12 bytes, not Go's trailing padding.
type landlockPathBeneathAttr struct {
	allowedAccess uint64
	parentFd      int32
}

// handledAccess is everything a worker's ruleset denies unless a rule
// allows it: every filesystem right the running ABI knows (an older kernel
// refuses a right it does not know, so each is added from its version on,
// the kernel documentation's best-effort pattern), and from ABI 6 the
// scopes that keep a worker from signalling processes outside it (the
// server among them) and from connecting to abstract Unix sockets.
func handledAccess(abi int) landlockRulesetAttr {
	a := landlockRulesetAttr{handledAccessFS: accessExecute | accessWriteFile | accessReadFile | accessReadDir |
		accessRemoveDir | accessRemoveFile | accessMakeChar | accessMakeDir | accessMakeReg |
		accessMakeSock | accessMakeFifo | accessMakeBlock | accessMakeSym}
	if abi >= 2 {
		a.handledAccessFS |= accessRefer
	}
	if abi >= 3 {
		a.handledAccessFS |= accessTruncate
	}
	if abi >= 5 {
		a.handledAccessFS |= accessIoctlDev
	}
	if abi >= 6 {
		a.scoped = scopeAbstractUnixSocket | scopeSignal
	}
	return a
}

// landlockReadOnly is all a confined worker may open, read-only: what Go
// reads at run time for a tool's HTTP and time zones. A path that does not
// exist is skipped; a symbolic link is followed, and the rule is on its
// target.
var landlockReadOnly = []string{
	// DNS, by Go's own resolver (confined workers get GODEBUG=netdns=go:
	// the C library's would load NSS modules it may not read).
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf",
	// TLS roots where crypto/x509 looks for them, and where the certificates
	// in those folders link to. Not /etc/ssl or /etc/pki whole: their
	// private/ folders hold private keys.
	"/etc/ssl/certs", "/etc/ssl/cert.pem", "/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/certs", "/etc/pki/tls/cacert.pem", "/etc/pki/ca-trust/extracted",
	"/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
	// Time zones, where package time looks for them, and the local zone.
	"/usr/share/zoneinfo", "/usr/share/lib/zoneinfo", "/usr/lib/locale/TZ", "/etc/zoneinfo", "/etc/localtime",
	"/dev/null", "/dev/urandom",
	// The Go runtime reads the huge page size as it starts.
	"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
}

// landlockWatched lists the entries of landlockReadOnly whose replacement
// the pool watches for (fileWatch): all but devices and kernel files, which
// no tool replaces (and sysfs sends no events). The rules landlockRules adds
// serve only the start-over, before the worker serves anything; the
// zone database of the Go installation is unused in adaptbot, which embeds
// time/tzdata.
func landlockWatched() []string {
	return slices.DeleteFunc(slices.Clone(landlockReadOnly), func(p string) bool {
		return strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/sys/")
	})
}

// landlockRules are the rules of a worker's ruleset: landlockReadOnly, the
// zone database of the Go installation that built the binary (time's last
// resort, unless the binary embeds time/tzdata, as adaptbot does), and what
// starting the executable over takes: the executable itself and, for a
// dynamically linked one (cgo), the loader and libraries mapped now, which
// the new image maps again, and the loader's cache.
func landlockRules() ([]landlockRule, error) {
	var rules []landlockRule
	for _, p := range landlockReadOnly {
		rules = append(rules, landlockRule{path: p, access: accessReadFile | accessReadDir})
	}
	//lint:ignore SA1019 package time itself falls back to runtime.GOROOT()/lib/time, so the rule names the same folder
	if goroot := runtime.GOROOT(); goroot != "" {
		rules = append(rules, landlockRule{path: goroot + "/lib/time", access: accessReadFile | accessReadDir})
	}
	rules = append(rules,
		landlockRule{path: "/proc/self/exe", access: accessReadFile | accessExecute, required: true},
		landlockRule{path: "/etc/ld.so.cache", access: accessReadFile},
		landlockRule{path: "/etc/ld.so.preload", access: accessReadFile},
	)
	mapped, err := mappedExecutables()
	if err != nil {
		return nil, err
	}
	for _, p := range mapped {
		rules = append(rules, landlockRule{path: p, access: accessReadFile | accessExecute})
	}
	return rules, nil
}

type landlockRule struct {
	path     string
	access   uint64
	required bool // fail rather than skip when it cannot be opened
}

// mappedExecutables lists the files this process has mapped executable:
// the binary, and for a cgo build the dynamic loader and C libraries.
func mappedExecutables() ([]string, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("list the libraries to start over with: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 6 || len(fields[1]) < 3 || fields[1][2] != 'x' {
			continue
		}
		p := strings.TrimSuffix(strings.TrimSpace(fields[5]), " (deleted)")
		if strings.HasPrefix(p, "/") && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list the libraries to start over with: %w", err)
	}
	return paths, nil
}

func landlockABI() (int, error) {
	abi, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, landlockCreateRulesetVersion)
	switch errno {
	case 0:
		return int(abi), nil
	case syscall.ENOSYS:
		return 0, errors.New("this kernel has no Landlock (ENOSYS: older than Linux 5.13, built without it, or a container's seccomp filter hides it)")
	case syscall.EOPNOTSUPP:
		return 0, errors.New("this kernel has Landlock turned off (EOPNOTSUPP: landlock is not in its lsm= boot parameter)")
	}
	return 0, fmt.Errorf("cannot use Landlock: landlock_create_ruleset: %w", errno)
}

// newRuleset creates the ruleset of a worker for abi and returns its file
// descriptor.
func newRuleset(abi int) (int, error) {
	rules, err := landlockRules()
	if err != nil {
		return -1, err
	}
	attr := handledAccess(abi)
	fd, _, errno := syscall.Syscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	rs := int(fd)
	for _, r := range rules {
		if err := addRule(rs, r, attr.handledAccessFS); err != nil {
			syscall.Close(rs)
			return -1, err
		}
	}
	return rs, nil
}

// addRule allows r.access beneath r.path (only the rights that apply to a
// file when it is one). A path that cannot be opened is skipped unless
// required.
func addRule(rs int, r landlockRule, handled uint64) error {
	fd, err := syscall.Open(r.path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		if r.required {
			return fmt.Errorf("open %s: %w", r.path, err)
		}
		return nil
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", r.path, err)
	}
	access := r.access & handled
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		access &= accessFileRights
	}
	attr := landlockPathBeneathAttr{allowedAccess: access, parentFd: int32(fd)}
	if _, _, errno := syscall.Syscall6(sysLandlockAddRule, uintptr(rs), landlockRulePathBeneath, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", r.path, errno)
	}
	return nil
}

// startOverConfined restricts one thread with the worker's ruleset and
// replaces the process, from that thread, with a new image of its own
// executable, which inherits the restriction and whose every thread
// descends from that one. (landlock_restrict_self restricts the calling
// thread alone, and syscall.AllThreadsSyscall, which could reach the
// others, is refused in binaries that use cgo, as adaptbot does for net.)
// The new image learns mode from its environment (confinedEnv). It returns
// only if something failed; the process is then as unconfined as before, the
// restricted thread having ended.
func startOverConfined(abi int, mode Landlock) error {
	rs, err := newRuleset(abi)
	if err != nil {
		return err
	}
	defer syscall.Close(rs)
	env := confinedEnv(mode)
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: should the exec fail, this thread, the only one
		// restricted, ends with the goroutine.
		runtime.LockOSThread()
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
			errc <- fmt.Errorf("set no_new_privs: %w", errno)
			return
		}
		if _, _, errno := syscall.Syscall(sysLandlockRestrictSelf, uintptr(rs), 0, 0); errno != 0 {
			errc <- fmt.Errorf("landlock_restrict_self: %w", errno)
			return
		}
		err := syscall.Exec("/proc/self/exe", os.Args, env)
		errc <- fmt.Errorf("start over confined: exec /proc/self/exe: %w", err)
	}()
	return <-errc
}

// confinedEnv is the environment of the confined image: the worker's, with
// landlockApplied and the setting, mode, in place of the setting (startedOver
// reads it), Go's DNS resolver, and the GOMAXPROCS the runtime chose here,
// where it could read the CPU limit of its cgroup (the confined image
// cannot).
func confinedEnv(mode Landlock) []string {
	var env []string
	godebug, maxprocs := "netdns=go", false
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case landlockEnv:
			continue
		case "GODEBUG":
			godebug += "," + v // later settings win: the server's WorkerEnv
			continue
		case "GOMAXPROCS":
			maxprocs = true
		}
		env = append(env, kv)
	}
	env = append(env, landlockEnv+"="+landlockApplied+":"+string(mode), "GODEBUG="+godebug)
	if !maxprocs {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	}
	return env
}

// checkConfined runs in the image startOverConfined started: it proves the
// restriction holds by failing to list the root folder, which no rule
// allows.
func checkConfined() workerConfinement {
	abi, err := landlockABI()
	if err != nil {
		return workerConfinement{Unconfined: err.Error()}
	}
	fd, err := syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err == nil {
		syscall.Close(fd)
		return workerConfinement{Unconfined: "started over to be confined, but can still list /"}
	}
	if !errors.Is(err, syscall.EACCES) {
		return workerConfinement{Unconfined: fmt.Sprintf("cannot tell whether it is confined: opening / failed with %v", err)}
	}
	return workerConfinement{Landlock: abi}
}
