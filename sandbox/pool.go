package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"adaptbot"
	"adaptbot/telemetry"
	"adaptbot/toolkit"
)

// killSlack is how long past a call's limit and grace the server waits for
// the worker's own verdict before killing it.
const killSlack = 400 * time.Millisecond

// Pool is the Runner of ModeWorkers: a fixed number of worker processes,
// each serving one call at a time. A worker that times out, crashes, runs
// past a limit or is left with a tool's goroutines is killed (or ends
// itself) and replaced in the background, so the pool keeps its size. When
// workers are confined by Landlock, every one is replaced after a file their
// rules hold changes (fileWatch). Confined workers also have a seccomp filter
// (installSeccomp).
//
// A call may call other tools (toolkit.Call): its worker sends the nested
// call over its pipe, the pool asks the toolkit.Caller of the call's
// context (the toolbox) to run it, and sends the answer back. While it
// waits, the caller holds its worker; so that a pool full of callers never
// waits for ever for their callees, a nested call (Call.Nested) that finds
// no idle worker gets one started beyond the pool's size — at most one per
// nested call in progress — which serves nested calls only and, once idle,
// stays a while (spareIdle, at most PoolSize of them) for the next one.
type Pool struct {
	opts    Options
	command []string
	env     []string
	cfg     workerConfig
	log     *slog.Logger
	specs   specCache
	client  *toolkit.Client // sends the requests of calls no Sender serves

	closing chan struct{}
	wg      sync.WaitGroup // replacements being started, and the file watch
	nextID  atomic.Uint64
	watch   *fileWatch // nil unless workers are confined and the watch runs

	mu          sync.Mutex
	closed      bool
	youngDeaths int            // workers in a row that died before serving a call
	procs       map[*proc]bool // every live worker, true while busy
	idle        []*proc
	waiters     []waiter // callers waiting for a worker: nested calls first, then oldest first
	starting    int
	// lent counts the nested calls in progress; extras the live workers
	// started beyond the pool's size for them (extraStarting more are
	// starting), of which spare are idle.
	lent          int
	extras        int
	extraStarting int
	spare         []*proc
	restarts      int64
	startFailures int64
	// gen counts the changes to the files workers may read (renew); a
	// worker started in an older generation is retired, not reused.
	gen uint64
	// The confinement of the last worker started, for Stats when none is
	// live, and whether the log has said it.
	lastConf        workerConfinement
	confinementSaid bool
}

var _ Runner = (*Pool)(nil)

// spareIdle is how long an extra worker (see Pool) waits idle for another
// nested call before it is stopped.
const spareIdle = 30 * time.Second

// waiter is a caller waiting for a worker.
type waiter struct {
	ch     chan *proc // buffered: a hand-over never blocks
	nested bool
}

// NewPool starts opts.PoolSize workers and returns once all have started.
// With LandlockRequire it fails at once on a kernel without Landlock or
// seccomp filters.
func NewPool(opts Options) (*Pool, error) {
	opts = opts.withDefaults()
	if _, err := ParseLandlock(string(opts.Landlock)); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if opts.Landlock == LandlockRequire {
		if _, err := landlockABI(); err != nil {
			return nil, fmt.Errorf("sandbox: Landlock is required, but %w", err)
		}
		if err := seccompSupport(); err != nil {
			return nil, fmt.Errorf("sandbox: Landlock is required, and with it the seccomp filter, but %w", err)
		}
	}
	command := opts.WorkerCommand
	if len(command) == 0 {
		var err error
		if command, err = defaultWorkerCommand(); err != nil {
			return nil, err
		}
	}
	command, err := absCommand(command)
	if err != nil {
		return nil, err
	}
	p := &Pool{
		opts:    opts,
		command: command,
		env:     workerEnv(opts),
		cfg: workerConfig{
			MemoryLimit:   opts.MemoryLimit,
			MaxGoroutines: opts.MaxGoroutines,
			MaxOutput:     opts.MaxOutput,
			CacheSize:     opts.CacheSize,
		},
		client:  toolkit.NewClient(opts.Toolkit),
		log:     opts.Log,
		closing: make(chan struct{}),
		procs:   map[*proc]bool{},
	}
	// Watch before the first worker makes its rules, so that no change
	// falls between the two.
	fw := p.openWatch()
	errs := make(chan error, opts.PoolSize)
	for i := 0; i < opts.PoolSize; i++ {
		go func() {
			w, err := p.start()
			if err == nil {
				p.adopt(w)
			}
			errs <- err
		}()
	}
	var first error
	for i := 0; i < opts.PoolSize; i++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		fw.close()
		p.Close()
		return nil, fmt.Errorf("sandbox: %w", first)
	}
	p.startWatch(fw)
	return p, nil
}

// workerEnv is all a worker gets of an environment: none of the server's
// variables, which may hold secrets, only the Go runtime's settings and the
// Landlock setting.
func workerEnv(opts Options) []string {
	env := []string{
		"GOMEMLIMIT=" + strconv.FormatInt(opts.MemoryLimit, 10),
		"GOTRACEBACK=single",
		landlockEnv + "=" + string(opts.Landlock),
	}
	return append(env, opts.WorkerEnv...)
}

// start starts a worker. With LandlockRequire it refuses one that says it
// is not confined by Landlock and seccomp (the worker refuses itself; this
// catches a worker binary that knows nothing of them, and says nothing).
func (p *Pool) start() (*proc, error) {
	// The generation before the worker makes its rules: a change while it
	// starts makes it stale, at worst needlessly.
	p.mu.Lock()
	gen := p.gen
	p.mu.Unlock()
	w, err := startProc(p.command, p.env, p.cfg, p.log)
	if err != nil {
		return nil, err
	}
	w.gen = gen
	if p.opts.Landlock == LandlockRequire {
		if err := w.conf.required(); err != nil {
			w.kill()
			return nil, err
		}
	}
	p.mu.Lock()
	say, changed := !p.confinementSaid, w.conf != p.lastConf
	p.confinementSaid, p.lastConf = true, w.conf
	p.mu.Unlock()
	if say {
		p.sayConfinement(w.conf)
	} else if changed {
		// Not expected: the same binary on the same kernel.
		p.log.Warn("sandbox: a worker is confined unlike the one before", "worker", w.pid, "confinement", w.conf.describe())
	}
	return w, nil
}

// sayConfinement logs, once, how the pool's workers are confined: a warning
// when they could be and are not (fully).
func (p *Pool) sayConfinement(c workerConfinement) {
	switch {
	case c.Landlock > 0 && c.Seccomp:
		p.log.Info("sandbox: workers are confined by Landlock and a seccomp filter", "abi", c.Landlock)
	case c.Landlock > 0:
		p.log.Warn("sandbox: workers are confined by Landlock, without a seccomp filter", "abi", c.Landlock, "reason", noSeccompReason(c.NoSeccomp))
	case p.opts.Landlock == LandlockOff:
		p.log.Info("sandbox: workers are not confined by Landlock", "reason", unconfinedReason(c.Unconfined))
	default:
		p.log.Warn("sandbox: workers are not confined by Landlock", "reason", unconfinedReason(c.Unconfined))
	}
}

// Compile loads the tool in a worker without calling it.
func (p *Pool) Compile(ctx context.Context, tool string, source []byte) (err error) {
	ctx, span := telemetry.StartSandbox(ctx, opCompile, tool)
	defer func() { span.End(string(adaptbot.FailureOf(err)), err) }()
	_, err = p.do(ctx, opCompile, Call{Tool: tool, Source: source})
	return err
}

// Run calls the tool in a worker.
func (p *Pool) Run(ctx context.Context, c Call) (_ Result, err error) {
	ctx, span := telemetry.StartSandbox(ctx, opCall, c.Tool)
	defer func() { span.End(string(adaptbot.FailureOf(err)), err) }()
	return p.do(ctx, opCall, c)
}

func (p *Pool) do(ctx context.Context, op string, c Call) (Result, error) {
	if err := checkInput(c.Tool, c.Input); err != nil {
		return Result{}, err
	}
	hash := sourceHash(c.Tool, c.Source)
	spec, err := p.specs.check(hash, c.Tool, c.Source)
	if err != nil {
		return Result{}, err
	}
	limit := callTimeout(p.opts.CallTimeout, spec.timeout, c.Timeout)
	if c.Nested {
		if limit, err = nestedLimit(ctx, c.Tool, limit); err != nil {
			return Result{}, err
		}
		p.mu.Lock()
		p.lent++
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.lent--
			p.mu.Unlock()
		}()
	}
	host := hostOf(ctx, p.client, spec.hosts)
	for attempt := 0; ; attempt++ {
		w, err := p.acquire(ctx, c.Tool, c.Nested)
		if err != nil {
			return Result{}, err
		}
		telemetry.SandboxWorker(ctx, w.pid)
		req := request{ID: p.nextID.Add(1), Op: op, Tool: c.Tool, Hash: hash, Input: c.Input, Timeout: limit}
		if !w.has[hash] {
			req.Source = c.Source
		}
		resp, err := p.roundTrip(ctx, w, req, c.Source, limit, host)
		if errors.Is(err, errNotSent) && attempt == 0 {
			// The worker died idle, before this call reached it: not the
			// tool's doing, so try another.
			p.retire(w, "died while idle")
			continue
		}
		if err != nil {
			p.retire(w, err.Error())
			return Result{}, p.callError(c.Tool, err, errors.Is(err, errNotSent))
		}
		if resp.Kind != adaptbot.FailCompile {
			if len(w.has) >= 4*p.opts.CacheSize {
				clear(w.has) // the worker has evicted most; it asks again
			}
			w.has[hash] = true
		}
		if resp.Exit != "" {
			p.retire(w, resp.Exit)
		} else {
			p.release(w)
		}
		if resp.Kind == adaptbot.FailTimeout && ctx.Err() != nil {
			// The caller gave up first: its error, not the tool's.
			return Result{Duration: resp.Duration}, fmt.Errorf("tool %s: %w", c.Tool, ctx.Err())
		}
		return resp.outcome.result(c.Tool)
	}
}

// callError turns a failed round trip into the call's error; unsent says
// the call never reached its worker.
func (p *Pool) callError(tool string, err error, unsent bool) error {
	if p.isClosed() {
		if unsent {
			return &Error{Tool: tool, Kind: adaptbot.FailUnavailable, Msg: "the sandbox is closed", unsent: true}
		}
		return &Error{Tool: tool, Kind: adaptbot.FailUnavailable, Msg: "the sandbox was closed while the call ran"}
	}
	var e *Error
	if errors.As(err, &e) && e.Tool == "" {
		e.Tool = tool
	}
	return err
}

// acquire takes an idle worker, waiting up to QueueTimeout. Waiting
// callers are served in order, nested calls first. A nested call may also
// take a spare extra worker, or have one started (see Pool).
func (p *Pool) acquire(ctx context.Context, tool string, nested bool) (*proc, error) {
	var timeout <-chan time.Time
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, &Error{Tool: tool, Kind: adaptbot.FailUnavailable, Msg: "the sandbox is closed", unsent: true}
		}
		w := p.takeIdle(nested)
		if w != nil {
			p.mu.Unlock()
			if w.dead() {
				p.retire(w, "died while idle")
				continue
			}
			return w, nil
		}
		if nested && p.extras+p.extraStarting < p.lent {
			p.extraStarting++
			p.wg.Add(1)
			go p.startExtra()
		}
		ch := make(chan *proc, 1)
		p.enqueue(waiter{ch: ch, nested: nested})
		p.mu.Unlock()

		if timeout == nil {
			t := time.NewTimer(p.opts.QueueTimeout)
			defer t.Stop()
			timeout = t.C
		}
		var err error
		select {
		case w := <-ch:
			if w.dead() {
				p.retire(w, "died while idle")
				continue
			}
			return w, nil
		case <-ctx.Done():
			err = fmt.Errorf("tool %s: waiting for a free worker: %w", tool, ctx.Err())
		case <-timeout:
			err = &Error{Tool: tool, Kind: adaptbot.FailUnavailable, Msg: fmt.Sprintf("no worker was free within %v (pool of %d)", p.opts.QueueTimeout, p.opts.PoolSize), unsent: true}
		case <-p.closing:
			err = &Error{Tool: tool, Kind: adaptbot.FailUnavailable, Msg: "the sandbox is closed", unsent: true}
		}
		p.mu.Lock()
		i := slices.IndexFunc(p.waiters, func(x waiter) bool { return x.ch == ch })
		if i >= 0 {
			p.waiters = slices.Delete(p.waiters, i, i+1)
		}
		p.mu.Unlock()
		if i < 0 {
			// A worker was handed over meanwhile: pass it on.
			p.release(<-ch)
		}
		return nil, err
	}
}

// takeIdle takes an idle worker for a caller, or returns nil: the most
// recently used one, whose cache is the warmest; for a nested call a spare
// extra one if no other is idle. Called with p.mu held.
func (p *Pool) takeIdle(nested bool) *proc {
	var w *proc
	switch {
	case len(p.idle) > 0:
		w = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
	case nested && len(p.spare) > 0:
		w = p.spare[len(p.spare)-1]
		p.spare = p.spare[:len(p.spare)-1]
		w.spareTimer.Stop()
	default:
		return nil
	}
	p.procs[w] = true
	return w
}

// enqueue adds a waiting caller: a nested call after the nested calls
// already waiting, before every other caller, since its caller holds a
// worker until it is served. Called with p.mu held.
func (p *Pool) enqueue(x waiter) {
	if !x.nested {
		p.waiters = append(p.waiters, x)
		return
	}
	i := slices.IndexFunc(p.waiters, func(y waiter) bool { return !y.nested })
	if i < 0 {
		i = len(p.waiters)
	}
	p.waiters = slices.Insert(p.waiters, i, x)
}

// startExtra starts a worker beyond the pool's size for a nested call that
// found none idle; p.extraStarting counts it. It serves nested calls only.
func (p *Pool) startExtra() {
	defer p.wg.Done()
	w, err := p.start()
	p.mu.Lock()
	p.extraStarting--
	if err == nil {
		w.extra = true
		p.extras++
	}
	p.mu.Unlock()
	if err != nil {
		p.log.Error("sandbox: an extra worker for a nested call failed to start; the call waits for a busy one", "err", err)
		return
	}
	p.adopt(w)
}

// adopt puts a started worker in the pool and watches for its end: one
// that dies idle is replaced at once, so that Stats stays true.
func (p *Pool) adopt(w *proc) {
	p.release(w)
	go func() {
		<-w.exited
		p.mu.Lock()
		busy, live := p.procs[w]
		if live && !busy {
			if i := slices.Index(p.idle, w); i >= 0 {
				p.idle = slices.Delete(p.idle, i, i+1)
			}
			if i := slices.Index(p.spare, w); i >= 0 {
				p.spare = slices.Delete(p.spare, i, i+1)
				w.spareTimer.Stop()
			}
		}
		p.mu.Unlock()
		if live && !busy {
			p.retire(w, "exited while idle")
		}
		// A busy worker's death is the call's to report.
	}()
}

// release hands w to the longest-waiting caller, or makes it idle; or
// retires it if it started before the files it may read last changed
// (renew), which is how a worker busy at the change is replaced once its
// call ends, and one starting at the change once it has started.
func (p *Pool) release(w *proc) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.kill()
		return
	}
	if w.gen != p.gen {
		p.procs[w] = true // live for retire, and handed to no one
		p.mu.Unlock()
		p.retire(w, "a file workers may read changed since it started")
		return
	}
	if len(p.waiters) > 0 && (!w.extra || p.waiters[0].nested) {
		x := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.procs[w] = true
		p.mu.Unlock()
		x.ch <- w // buffered: never blocks
		return
	}
	p.procs[w] = false
	if !w.extra {
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		return
	}
	if len(p.spare) >= p.opts.PoolSize {
		p.mu.Unlock()
		p.retire(w, "enough extra workers wait already")
		return
	}
	p.spare = append(p.spare, w)
	if w.spareTimer == nil {
		w.spareTimer = time.AfterFunc(spareIdle, func() { p.expire(w) })
	} else {
		w.spareTimer.Reset(spareIdle)
	}
	p.mu.Unlock()
}

// expire stops an extra worker that has waited spareIdle for a nested
// call, unless one took it meanwhile.
func (p *Pool) expire(w *proc) {
	p.mu.Lock()
	i := slices.Index(p.spare, w)
	if i >= 0 {
		p.spare = slices.Delete(p.spare, i, i+1)
	}
	p.mu.Unlock()
	if i >= 0 {
		p.retire(w, "no nested call needed it")
	}
}

// retire takes w out of the pool and, in the background, kills it (if it
// has not ended itself) and starts a replacement, backing off while
// replacements fail to start so that a broken binary does not spin.
func (p *Pool) retire(w *proc, why string) {
	p.mu.Lock()
	_, live := p.procs[w]
	delete(p.procs, w)
	if p.closed || !live {
		// Closing, or retired already by another path.
		p.mu.Unlock()
		w.kill()
		return
	}
	if w.extra {
		// Beyond the pool's size: not replaced.
		p.extras--
		p.wg.Add(1)
		p.mu.Unlock()
		p.log.Debug("sandbox: stopping an extra worker", "worker", w.pid, "reason", why)
		go func() {
			defer p.wg.Done()
			w.kill()
		}()
		return
	}
	p.restarts++
	p.starting++
	wait := p.replaceDelay(w)
	p.wg.Add(1)
	p.mu.Unlock()
	p.log.Info("sandbox: replacing worker", "worker", w.pid, "reason", why)
	go func() {
		defer p.wg.Done()
		// A worker that announced its exit gets a moment to go by itself.
		select {
		case <-w.exited:
		case <-time.After(100 * time.Millisecond):
		}
		w.kill()
		p.replace(wait)
	}()
}

// replaceDelay is how long to wait before replacing w. A worker that dies
// before serving a call is the binary's fault, not a tool's: back off, so
// that a crash loop does not spin. A worker of an older generation is retired
// for a file change (renew), not for dying, however young. Called with p.mu
// held.
func (p *Pool) replaceDelay(w *proc) time.Duration {
	switch {
	case w.gen != p.gen:
		return 0
	case w.calls == 0 && time.Since(w.started) < time.Second:
		p.youngDeaths++
		return min(50*time.Millisecond<<min(p.youngDeaths, 7), 5*time.Second)
	}
	p.youngDeaths = 0
	return 0
}

// renew replaces every worker, since a file their Landlock rules hold has
// changed (fileWatch): the idle ones at once, the busy ones as their call
// ends (release). The tools they have compiled go with them.
func (p *Pool) renew(why string) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.gen++
	idle := append(p.idle, p.spare...)
	p.idle, p.spare = nil, nil
	p.mu.Unlock()
	p.log.Info("sandbox: replacing every worker", "reason", why)
	for _, w := range idle {
		p.retire(w, why)
	}
}

// replace starts one worker for a retired one, after wait; p.starting
// counts it.
func (p *Pool) replace(wait time.Duration) {
	select {
	case <-p.closing:
		p.mu.Lock()
		p.starting--
		p.mu.Unlock()
		return
	case <-time.After(wait):
	}
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-p.closing:
			p.mu.Lock()
			p.starting--
			p.mu.Unlock()
			return
		default:
		}
		w, err := p.start()
		p.mu.Lock()
		if err == nil {
			p.starting--
			p.mu.Unlock()
			p.adopt(w)
			return
		}
		p.startFailures++
		p.mu.Unlock()
		p.log.Error("sandbox: worker failed to start", "err", err, "retry_in", backoff)
		select {
		case <-p.closing:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Close kills every worker, busy or idle, and waits until all are reaped.
// Calls in flight fail with adaptbot.FailUnavailable.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.closing)
	var all []*proc
	for w := range p.procs {
		all = append(all, w)
	}
	clear(p.procs)
	p.idle = nil
	for _, w := range p.spare {
		w.spareTimer.Stop()
	}
	p.spare = nil
	p.mu.Unlock()
	for _, w := range all {
		w.kill()
	}
	p.wg.Wait()
	return nil
}

// Stats describes the pool now.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{
		Mode:          ModeWorkers,
		Size:          p.opts.PoolSize,
		Starting:      p.starting,
		Restarts:      p.restarts,
		StartFailures: p.startFailures,
	}
	s.Idle = len(p.idle)
	weakest, allSeccomp := p.lastConf, true // the last one when no worker is live
	first := true
	for w, busy := range p.procs {
		if first || w.conf.weaker(weakest) {
			weakest = w.conf
		}
		first = false
		allSeccomp = allSeccomp && w.conf.Seccomp
		s.PIDs = append(s.PIDs, w.pid)
		if w.extra {
			s.Extra++
			continue
		}
		s.Live++
		if busy {
			s.Busy++
		}
	}
	s.Confined, s.Seccomp, s.Confinement = weakest.Landlock > 0, weakest.Seccomp && allSeccomp, weakest.describe()
	return s
}
