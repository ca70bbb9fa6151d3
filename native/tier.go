package native

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/sandbox"
	"adaptbot/telemetry"
)

// The settings of ADAPTBOT_NATIVE.
const (
	// ModeAuto compiles every tool version that serves, where a Go
	// toolchain is found.
	ModeAuto = "auto"
	// ModeOff never compiles: every tool runs interpreted.
	ModeOff = "off"
)

// ParseMode reads ADAPTBOT_NATIVE; "" is ModeAuto.
func ParseMode(s string) (string, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeOff:
		return ModeOff, nil
	}
	return "", fmt.Errorf("ADAPTBOT_NATIVE=%q: use %q or %q", s, ModeAuto, ModeOff)
}

// The tiers a call runs on (sandbox.Result.Tier).
const (
	Interpreted = sandbox.TierInterpreted
	Native      = sandbox.TierNative
)

// The states of a tool version on its way to the native tier.
const (
	StateOff      = "off"      // ADAPTBOT_NATIVE=off
	StateNoGo     = "no_go"    // no Go toolchain on this machine
	StateWaiting  = "waiting"  // not served yet, or waiting for a build slot
	StateBuilding = "building" // being compiled
	StateChecking = "checking" // compiled; being compared with the interpreter
	StateNative   = "native"   // serves natively
	StateRefused  = "refused"  // its source may not be compiled natively
	StateFailed   = "failed"   // the build or its worker failed
	StateDiffers  = "differs"  // the native build gave another result than the interpreter
	StateUnsteady = "unsteady" // the interpreter itself gives different results run to run
	StateEvicted  = "evicted"  // its binary was dropped to bound the disk; rebuilt on next use
)

// Status is where a tool version stands: the tier its calls run on and,
// when that is not the native one, why.
type Status = adaptbot.TierStatus

// Mismatch is a call on which a native build and the interpreter disagree:
// the build never serves, and the difference is recorded as a failure case.
type Mismatch struct {
	Tool, Digest string
	Input        json.RawMessage
	// Interpreted and Native are what each gave: the output, or the kind
	// and message of the error.
	Interpreted, Native string
}

// Reason says the mismatch in words.
func (m Mismatch) Reason() string {
	return fmt.Sprintf("the native build differs from the interpreter on %s: interpreted %s, native %s",
		clip.String(string(m.Input), 200), clip.String(m.Interpreted, 300), clip.String(m.Native, 300))
}

// Options configure a Tier.
type Options struct {
	// Mode is ModeAuto or ModeOff ("" is ModeAuto).
	Mode string
	// Go is the go command (Toolchain); "" means there is none.
	Go string
	// Dir is the native builder's own folder: its build cache, Go folders
	// and binaries. It shares nothing with the server's.
	Dir string
	// Cache is the build cache, if not Dir's own "cache" folder (the tests
	// keep one across runs). It must belong to the native builder alone.
	Cache string
	// Builds bounds the builds that run at once (default 1).
	Builds int
	// Keep bounds the binaries kept on disk, least recently used first out
	// (default 16). A rollback to a kept version finds its binary again.
	Keep int
	// CacheLimit bounds the build cache on disk, in bytes (default
	// DefaultCacheLimit): after a build, the files used least recently go
	// until it holds three quarters of that.
	CacheLimit int64
	// Versions bounds the tool versions the tier remembers (default 256):
	// past it, the one used least recently that is neither building nor
	// serving natively now is forgotten, and starts over at its next call
	// (its kept binary is found again).
	Versions int
	// Pools bounds the native worker pools alive at once, least recently
	// used first out (default 4); PoolSize is each one's size (default 1).
	Pools, PoolSize int
	// Sandbox is how native workers run: the interpreted pool's limits,
	// Landlock setting, toolkit and log. Its WorkerCommand and WorkerEnv
	// are replaced.
	Sandbox sandbox.Options
	// Recent is how many recent successful calls of a version are kept for
	// the differential check (default 8).
	Recent int
	// Log says what the tier does (default: Sandbox.Log, or slog.Default).
	Log *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Mode == "" {
		o.Mode = ModeAuto
	}
	if o.Builds <= 0 {
		o.Builds = 1
	}
	if o.Keep <= 0 {
		o.Keep = 16
	}
	if o.CacheLimit <= 0 {
		o.CacheLimit = DefaultCacheLimit
	}
	if o.Versions <= 0 {
		o.Versions = 256
	}
	if o.Pools <= 0 {
		o.Pools = 4
	}
	if o.PoolSize <= 0 {
		o.PoolSize = 1
	}
	if o.Recent <= 0 {
		o.Recent = 8
	}
	if o.Log == nil {
		o.Log = o.Sandbox.Log
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

// Tier is a sandbox.Runner with two tiers, as a JIT has: a tool version
// runs interpreted (the runner it wraps) until, after its first successful
// call, it has been compiled in the background into a native worker
// program and that program has given the interpreter's results on the
// tool's examples and its recent calls. Then its calls run on a pool of
// native workers, confined as interpreted workers are. Everything is keyed
// by the version's digest: a version never runs another's binary.
type Tier struct {
	interp sandbox.Runner
	opts   Options
	slots  chan struct{}

	examples atomicFunc[func(tool string, code []byte) Sample]
	mismatch atomicFunc[func(Mismatch)]

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	cleanBins sync.Once // binDir removes other runtimes' binaries once
	// cache is held (read) by each build and (write) while the build cache
	// is trimmed, so that no build sees its files go.
	cache sync.RWMutex

	mu       sync.Mutex
	closed   bool
	versions map[string]*version // by digest
	live     []*version          // those with a live pool, least recently used first
	retiring map[*livePool]bool  // pools out of live with calls still running
	clock    uint64              // counts uses, for version.used
}

// version is one tool version's state in the tier.
type version struct {
	tool, digest string
	code         []byte
	status       Status
	recent       []json.RawMessage // inputs of recent successful calls, newest last
	bin          string            // the binary, once built
	pool         *livePool         // live while native and among the Pools most recent
	starting     bool
	building     bool   // its build (or the wait for a slot) is under way
	used         uint64 // the tier's clock at its last call
}

// livePool is a pool of native workers with the calls running on it: a
// pool dropped from the live set (to bound them) is closed only once its
// last call has returned, so that no call is cut off halfway and run
// again elsewhere.
type livePool struct {
	*sandbox.Pool
	calls   int
	retired bool
}

var _ sandbox.Runner = (*Tier)(nil)

// New returns interp with a native tier above it.
func New(interp sandbox.Runner, opts Options) *Tier {
	opts = opts.withDefaults()
	// The folders go to the go command, which runs in a folder of its own,
	// and the binaries to workers, which start in /: absolute, once.
	for _, p := range []*string{&opts.Dir, &opts.Cache} {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Tier{interp: interp, opts: opts, slots: make(chan struct{}, opts.Builds), ctx: ctx, cancel: cancel,
		versions: map[string]*version{}, retiring: map[*livePool]bool{}}
	switch {
	case opts.Mode == ModeOff:
		opts.Log.Info("native: the native tier is off (ADAPTBOT_NATIVE=off); tools run interpreted")
	case opts.Go == "":
		opts.Log.Info("native: no Go toolchain (go on PATH or in GOROOT); tools run interpreted")
	}
	return t
}

// Probe is one call the differential check makes of a version, on both
// tiers.
type Probe struct {
	Input json.RawMessage
	// Bind, when set, gives each run of the probe a context of its own:
	// one in which an example's exchanges answer the tool's requests
	// (egress.Replay), so that the check sends nothing.
	Bind func(ctx context.Context) context.Context
}

// Sample is what the differential check may run of a version: its stored
// examples, and whether its recent real calls may be run again.
type Sample struct {
	Examples []Probe
	// Acts says the tool acts on people's systems (it declares hosts, or
	// sends with toolkit.Do or PostJSON): its recent real calls are never
	// run again, since each would send its requests again; it is checked
	// on its examples alone, answered from their exchanges.
	Acts bool
}

// SetExamples gives the tier each version's sample (its stored examples,
// and whether it acts), for the differential check.
func (t *Tier) SetExamples(f func(tool string, code []byte) Sample) { t.examples.set(f) }

// OnMismatch sets what is done with a native build that differs from the
// interpreter (record a failure case).
func (t *Tier) OnMismatch(f func(Mismatch)) { t.mismatch.set(f) }

// Compile checks the tool with the interpreter.
func (t *Tier) Compile(ctx context.Context, tool string, source []byte) error {
	return t.interp.Compile(ctx, tool, source)
}

// Stats describes the interpreted runner.
func (t *Tier) Stats() sandbox.Stats { return t.interp.Stats() }

// Status says which tier runs the version code of tool, and why not the
// native one.
func (t *Tier) Status(tool string, code []byte) Status {
	d := sandbox.Digest(tool, code)
	t.mu.Lock()
	defer t.mu.Unlock()
	if v := t.versions[d]; v != nil {
		return v.status
	}
	return t.initial()
}

// Describe says in a line what the tier does with tools, for the server's
// start-up message.
func (t *Tier) Describe() string {
	switch {
	case t.opts.Mode == ModeOff:
		return "off (ADAPTBOT_NATIVE=off): tools run interpreted"
	case t.opts.Go == "":
		return "no Go toolchain (go on PATH or in GOROOT): tools run interpreted"
	}
	return fmt.Sprintf("a tool is compiled natively with %s after its first successful call, in %s (ADAPTBOT_NATIVE=off turns that off)", t.opts.Go, t.opts.Dir)
}

// initial is the status of a version the tier has not seen serve.
func (t *Tier) initial() Status {
	switch {
	case t.opts.Mode == ModeOff:
		return Status{Tier: Interpreted, State: StateOff, Reason: "the native tier is off (ADAPTBOT_NATIVE=off)"}
	case t.opts.Go == "":
		return Status{Tier: Interpreted, State: StateNoGo, Reason: "no Go toolchain on this machine (go on PATH or in GOROOT)"}
	}
	return Status{Tier: Interpreted, State: StateWaiting, Reason: "it is compiled natively after its first successful call"}
}

// Run runs the call on the native tier when its version has one, and
// otherwise interpreted. The result (Tier) and the span of the call say
// which. A call runs once, on one tier: whatever happens to its native
// pool meanwhile, it is never run again interpreted (a tool may act on
// someone's system).
func (t *Tier) Run(ctx context.Context, c sandbox.Call) (sandbox.Result, error) {
	d := sandbox.Digest(c.Tool, c.Source)
	if pool := t.nativePool(d); pool != nil {
		defer t.release(pool)
		telemetry.ToolTier(ctx, Native)
		res, err := pool.Run(ctx, c)
		res.Tier = Native
		return res, err
	}
	telemetry.ToolTier(ctx, Interpreted)
	res, err := t.interp.Run(ctx, c)
	res.Tier = Interpreted
	if err == nil {
		t.served(c, d)
	}
	return res, err
}

// TierOf says which tier a call of the version would run on now.
func (t *Tier) TierOf(tool string, code []byte) string { return t.Status(tool, code).Tier }

// nativePool returns the live native pool of version d, held for one call
// until release, or nil; it starts one in the background for a native
// version whose pool was stopped.
func (t *Tier) nativePool(d string) *livePool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.versions[d]
	if v == nil {
		return nil
	}
	t.clock++
	v.used = t.clock
	if v.status.State != StateNative {
		return nil
	}
	if v.pool != nil {
		if i := slices.Index(t.live, v); i >= 0 {
			t.live = append(slices.Delete(t.live, i, i+1), v)
		}
		v.pool.calls++
		return v.pool
	}
	if !v.starting && !t.closed {
		v.starting = true
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			p, err := t.startPool(v.bin)
			if err != nil {
				t.mu.Lock()
				v.starting = false
				t.mu.Unlock()
				t.workerFailed(v, err)
				return
			}
			t.mu.Lock()
			v.starting = false
			t.adoptLocked(v, p)
			t.mu.Unlock()
		}()
	}
	return nil
}

// release ends a call's hold on p; the last call of a retired pool closes
// it.
func (t *Tier) release(p *livePool) {
	t.mu.Lock()
	p.calls--
	last := p.retired && p.calls == 0
	if last {
		delete(t.retiring, p)
	}
	t.mu.Unlock()
	if last {
		p.Close()
	}
}

// adoptLocked makes p the live pool of v, retiring the least recently used
// pool beyond the bound: it closes at once when idle, else when its last
// call returns. Called with t.mu held.
func (t *Tier) adoptLocked(v *version, p *sandbox.Pool) {
	if t.closed {
		go p.Close()
		return
	}
	v.pool = &livePool{Pool: p}
	t.live = append(t.live, v)
	for len(t.live) > t.opts.Pools {
		old := t.live[0]
		t.live = t.live[1:]
		old.pool.retired = true
		if old.pool.calls == 0 {
			go old.pool.Close()
		} else {
			t.retiring[old.pool] = true
		}
		old.pool = nil
	}
}

// served notes a successful interpreted call of version d: its input joins
// the sample for the differential check, and the version's first success
// starts its native build.
func (t *Tier) served(c sandbox.Call, d string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	v := t.versions[d]
	if v == nil {
		v = &version{tool: c.Tool, digest: d, code: c.Source, status: t.initial()}
		t.versions[d] = v
		if v.status.State == StateWaiting {
			v.building = true
			t.wg.Add(1)
			go t.build(v)
		}
		t.forgetLocked()
	}
	t.clock++
	v.used = t.clock
	if c.Nested {
		return // a call from another tool: no host to run its own calls later
	}
	if len(v.recent) >= t.opts.Recent {
		v.recent = v.recent[1:]
	}
	v.recent = append(v.recent, append(json.RawMessage(nil), c.Input...))
}

// forgetLocked forgets the versions used least recently beyond the bound
// (Options.Versions), of those that are neither building nor serving
// natively now. Called with t.mu held.
func (t *Tier) forgetLocked() {
	if len(t.versions) <= t.opts.Versions {
		return
	}
	var idle []*version
	for _, v := range t.versions {
		if !v.building && !v.starting && v.pool == nil {
			idle = append(idle, v)
		}
	}
	slices.SortFunc(idle, func(a, b *version) int { return cmp.Compare(a.used, b.used) })
	for _, v := range idle[:min(len(idle), len(t.versions)-t.opts.Versions)] {
		delete(t.versions, v.digest)
	}
}

func (t *Tier) setStatus(v *version, s Status) {
	t.mu.Lock()
	v.status = s
	t.mu.Unlock()
}

// build compiles version v, checks it against the interpreter and, if it
// gives the same results, makes it serve.
func (t *Tier) build(v *version) {
	defer t.wg.Done()
	defer func() {
		t.mu.Lock()
		v.building = false
		t.mu.Unlock()
	}()
	select {
	case t.slots <- struct{}{}:
	case <-t.ctx.Done():
		return
	}
	defer func() { <-t.slots }()
	bin, err := t.binary(v)
	if err != nil {
		switch {
		case errors.Is(err, errRefused):
			t.setStatus(v, Status{Tier: Interpreted, State: StateRefused, Reason: err.Error()})
		case t.ctx.Err() != nil:
			t.setStatus(v, Status{Tier: Interpreted, State: StateWaiting, Reason: "the server stopped during its native build"})
		default:
			// The go command's own words go to the log, for whoever runs
			// the server; the tool's page says what happened and what to do.
			t.setStatus(v, Status{Tier: Interpreted, State: StateFailed, Reason: buildFailure(err, t.opts.Dir)})
			t.opts.Log.Warn("native: build failed; the tool keeps running interpreted", "tool", v.tool, "digest", v.digest[:12], "err", err)
		}
		return
	}
	t.mu.Lock()
	v.bin = bin
	v.status = Status{Tier: Interpreted, State: StateChecking, Reason: "its native build is being compared with the interpreter"}
	t.mu.Unlock()
	p, err := t.startPool(bin)
	if err != nil {
		t.workerFailed(v, err)
		return
	}
	s, m := t.differential(v, p)
	if m != nil {
		// Recorded before the status says so, so that whoever reads the
		// status finds the case.
		t.opts.Log.Warn("native: the native build differs from the interpreter; the tool keeps running interpreted", "tool", v.tool, "reason", m.Reason())
		if f := t.mismatch.get(); f != nil {
			f(*m)
		}
	}
	t.mu.Lock()
	v.status = s
	if s.State == StateNative {
		t.adoptLocked(v, p)
		p = nil
	}
	t.mu.Unlock()
	if p != nil {
		p.Close()
	}
	if s.State == StateNative {
		t.opts.Log.Info("native: the tool serves natively", "tool", v.tool, "digest", v.digest[:12])
	}
}

// workerFailed records that v's native worker did not start: in words on
// the tool's page, with the worker's own in the log.
func (t *Tier) workerFailed(v *version, err error) {
	t.setStatus(v, Status{Tier: Interpreted, State: StateFailed, Reason: workerFailure})
	if t.ctx.Err() == nil {
		t.opts.Log.Warn("native: the native worker did not start; the tool keeps running interpreted", "tool", v.tool, "digest", v.digest[:12], "err", err)
	}
}

var errRefused = errors.New("refused")

// startPool starts a pool of native workers running bin, confined as the
// interpreted workers are.
func (t *Tier) startPool(bin string) (*sandbox.Pool, error) {
	o := t.opts.Sandbox
	o.Mode = sandbox.ModeWorkers
	o.PoolSize = t.opts.PoolSize
	o.WorkerCommand = []string{bin}
	o.WorkerEnv = nil
	return sandbox.NewPool(o)
}

// differential runs v's examples and recent calls on both tiers (a tool
// that acts: its examples alone, never a real call again). The build
// serves only if every one gives the same output, or the same error. A
// difference the interpreter also shows against itself (a clock, a random
// number, the network) is not the build's: such a tool stays interpreted,
// unsteady, and no case is recorded.
func (t *Tier) differential(v *version, p *sandbox.Pool) (Status, *Mismatch) {
	var sample Sample
	if f := t.examples.get(); f != nil {
		sample = f(v.tool, v.code)
	}
	probes := sample.Examples
	if !sample.Acts {
		t.mu.Lock()
		for _, in := range v.recent {
			probes = append(probes, Probe{Input: in})
		}
		t.mu.Unlock()
	}
	seen := map[string]bool{}
	checked := 0
	for _, pr := range probes {
		in := pr.Input
		if seen[string(in)] {
			continue
		}
		seen[string(in)] = true
		if t.ctx.Err() != nil {
			return Status{Tier: Interpreted, State: StateWaiting, Reason: "the server is stopping"}, nil
		}
		c := sandbox.Call{Tool: v.tool, Source: v.code, Input: in}
		run := func(r sandbox.Runner) string {
			ctx := t.ctx
			if pr.Bind != nil {
				ctx = pr.Bind(ctx)
			}
			return describe(r.Run(ctx, c))
		}
		nat := run(p)
		in1 := run(t.interp)
		if nat == in1 {
			checked++
			continue
		}
		if in2 := run(t.interp); in2 != in1 {
			return Status{Tier: Interpreted, State: StateUnsteady, Reason: fmt.Sprintf("the interpreter gives different results run to run on %s, so the native build cannot be checked against it", clip.String(string(in), 200))}, nil
		}
		m := &Mismatch{Tool: v.tool, Digest: v.digest, Input: in, Interpreted: in1, Native: nat}
		return Status{Tier: Interpreted, State: StateDiffers, Reason: m.Reason()}, m
	}
	if checked == 0 && sample.Acts {
		return Status{Tier: Interpreted, State: StateFailed, Reason: "it acts on people's systems, so its real calls are never run again to check the native build, and it has no example to check it with"}, nil
	}
	if checked == 0 {
		return Status{Tier: Interpreted, State: StateFailed, Reason: "no example or recent call to check the native build with"}, nil
	}
	return Status{Tier: Native, State: StateNative, Reason: fmt.Sprintf("its native build gave the interpreter's results on %d calls", checked)}, nil
}

// describe is a call's result as the differential check compares it.
func describe(res sandbox.Result, err error) string {
	if err != nil {
		return fmt.Sprintf("error (%s): %s", adaptbot.FailureOf(err), err)
	}
	return "output: " + res.Output
}

// Close stops the builds, the native pools (their calls fail, as the
// interpreted runner's do) and the interpreted runner.
func (t *Tier) Close() error {
	t.mu.Lock()
	t.closed = true
	var pools []*livePool
	for _, v := range t.live {
		pools = append(pools, v.pool)
		v.pool = nil
	}
	for p := range t.retiring {
		pools = append(pools, p)
	}
	t.live = nil
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	for _, p := range pools {
		p.Close()
	}
	return t.interp.Close()
}

// atomicFunc holds a function set after the tier starts (the registry is
// opened after the sandbox).
type atomicFunc[F any] struct {
	mu sync.Mutex
	f  F
}

func (a *atomicFunc[F]) set(f F) { a.mu.Lock(); a.f = f; a.mu.Unlock() }
func (a *atomicFunc[F]) get() F  { a.mu.Lock(); defer a.mu.Unlock(); return a.f }
