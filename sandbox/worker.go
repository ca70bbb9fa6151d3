package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/toolkit"
)

// Fixed limits of a worker process.
const (
	// maxStack makes unbounded recursion die fast, as a fatal stack overflow.
	maxStack = 64 << 20
	// maxThreads bounds OS threads (a tool has no blocking system calls of
	// its own; this only stops a runaway).
	maxThreads = 256
	// watchdogEvery is how often a worker checks its memory and goroutines.
	watchdogEvery = 10 * time.Millisecond
	// cancelGrace is how long a call may take, past its limit or the
	// caller's cancellation, to notice and return before it is abandoned
	// (in-process) or its worker killed.
	cancelGrace = 100 * time.Millisecond
)

// ServeWorker runs this process as a sandbox worker until the server closes
// its pipe. The server starts workers itself (Options.WorkerCommand); the
// binary's main must call ServeWorker when started that way, before doing
// anything else, for example:
//
//	if len(os.Args) > 1 && os.Args[1] == "worker" {
//		if err := sandbox.ServeWorker(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		os.Exit(0)
//	}
//
// A worker ends itself, with a final frame and a distinct exit code, when a
// call runs past its time limit or the worker past its memory or goroutine
// limit, and when a tool leaves goroutines running.
//
// A worker confines itself with Landlock first, before it reads anything from
// the server (see confineWorker): the process then starts over once, under
// the restriction, and puts its seccomp filter on every thread.
func ServeWorker() error {
	conf := confineOnce()
	reqs := os.NewFile(requestFD, "adaptbot-requests")
	resps := os.NewFile(responseFD, "adaptbot-responses")
	if reqs == nil || resps == nil {
		return errors.New("sandbox worker: no request and response pipes (fds 3 and 4); only the server starts workers")
	}
	if conf.err != nil {
		// The server reads this in place of a hello, and says why.
		writeFrame(resps, workerHello{PID: os.Getpid(), Error: conf.err.Error()}) //nolint:errcheck // exiting either way
		return conf.err
	}
	var cfg workerConfig
	if err := readFrame(reqs, &cfg, 1<<20); err != nil {
		return fmt.Errorf("sandbox worker: read configuration: %w", err)
	}
	cfg = cfg.withDefaults()
	w := newWorker(cfg, resps)
	if err := setLimits(cfg.MemoryLimit); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox worker: %v\n", err)
	}
	if err := w.send(workerHello{PID: os.Getpid(), workerConfinement: conf.workerConfinement}); err != nil {
		return fmt.Errorf("sandbox worker: say hello: %w", err)
	}
	go w.watch()

	calls := make(chan request, 1)
	go func() {
		defer close(calls)
		for {
			var r request
			if err := readFrame(reqs, &r, maxFrame(cfg.MaxOutput)); err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintf(os.Stderr, "sandbox worker: read request: %v\n", err)
				}
				if w.busy() {
					// The server is gone: no one waits for this call.
					os.Exit(0)
				}
				return
			}
			switch r.Op {
			case opCancel:
				w.cancel(r.ID)
				continue
			case opReturn:
				w.deliver(r)
				continue
			case opHold, opResume:
				w.hold(r.ID, r.Op == opHold)
				continue
			}
			calls <- r
		}
	}()
	for r := range calls {
		w.serve(r)
	}
	return nil
}

// confineOnce confines the worker once (confineWorker), whoever asks first:
// ServeWorker, or a native worker's package initialiser, which must confine
// before any tool's initialiser runs (native_worker.go).
var confineOnce = sync.OnceValue(confineWorker)

// toolFrames marks, in a goroutine's stack, the code of a tool: the
// interpreter's, or a native worker's tool packages (native_worker.go).
var toolFrames = []byte("github.com/traefik/yaegi/interp.")

// retireAfterFailure ends the worker after a call that panicked or timed
// out. An interpreted tool is loaded afresh instead (evict); a native
// worker cannot reload a tool's package state, so it starts over.
var retireAfterFailure = false

// setWorkerRuntime sets the runtime's limits, before any tool runs.
func setWorkerRuntime(memoryLimit int64) {
	debug.SetMemoryLimit(memoryLimit)
	debug.SetMaxStack(maxStack)
	debug.SetMaxThreads(maxThreads)
}

// worker is the state of a worker process: its cache of loaded tools and the
// call in progress.
type worker struct {
	cfg workerConfig

	outMu sync.Mutex
	out   io.Writer

	mu      sync.Mutex
	current uint64 // ID of the call in progress, 0 if none
	stopCur context.CancelFunc
	replied bool   // the call in progress has had its response
	clock   *clock // the time limit of the call in progress
	resumes []func()

	cache map[string]*program
	order []string // cache keys, oldest first

	// The nested calls (toolkit.Call) waiting for the server's answer, by
	// sequence number.
	nestedMu  sync.Mutex
	nestedSeq uint64
	nested    map[uint64]chan nestedReturn
}

func newWorker(cfg workerConfig, out io.Writer) *worker {
	setWorkerRuntime(cfg.MemoryLimit)
	return &worker{
		cfg:    cfg,
		out:    out,
		cache:  map[string]*program{},
		nested: map[uint64]chan nestedReturn{},
	}
}

func (w *worker) send(v any) error {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	return writeFrame(w.out, v)
}

// reply sends the response to call id unless one was sent already (the
// watchdog and the call may race to answer).
func (w *worker) reply(r response) {
	w.mu.Lock()
	if w.current != r.ID || w.replied {
		w.mu.Unlock()
		return
	}
	w.replied = true
	w.mu.Unlock()
	if err := w.send(r); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox worker: write response: %v\n", err)
		os.Exit(exitProtocol)
	}
}

// die answers the call in progress, if any, with a fatal outcome and ends the
// process: its heap, goroutines or interpreter can no longer be trusted.
func (w *worker) die(code int, o outcome) {
	w.mu.Lock()
	id := w.current
	w.mu.Unlock()
	if id != 0 {
		w.reply(response{ID: id, outcome: o, Exit: o.Msg})
	}
	fmt.Fprintf(os.Stderr, "sandbox worker: exiting: %s: %s\n", o.Kind, o.Msg)
	os.Exit(code)
}

func (w *worker) busy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current != 0
}

func (w *worker) cancel(id uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.current == id && w.stopCur != nil {
		w.stopCur()
	}
}

func (w *worker) serve(r request) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.mu.Lock()
	w.current, w.stopCur, w.replied = r.ID, cancel, false
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.current, w.stopCur = 0, nil
		w.mu.Unlock()
	}()

	limit := r.Timeout
	if limit <= 0 {
		limit = DefaultCallTimeout
	}
	ctx, clk, cancelLimit := withClock(ctx, limit)
	defer cancelLimit()
	w.mu.Lock()
	w.clock, w.resumes = clk, nil
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.clock, w.resumes = nil, nil
		w.mu.Unlock()
	}()
	start := time.Now()
	before := runtime.NumGoroutine()

	resp := w.run(ctx, r, limit)
	resp.ID = r.ID
	resp.Duration = time.Since(start)
	if leaked(before) {
		resp.Exit = "the tool left goroutines running after Execute returned"
	} else if retireAfterFailure && (resp.Kind == adaptbot.FailPanic || resp.Kind == adaptbot.FailTimeout) {
		resp.Exit = "a native tool's package state cannot be reloaded after a " + string(resp.Kind)
	}
	w.reply(resp)
	if resp.Exit != "" {
		fmt.Fprintf(os.Stderr, "sandbox worker: exiting: %s\n", resp.Exit)
		os.Exit(exitRecycle)
	}
}

// run loads the tool unless cached and, for a call, runs it. It ends the
// worker when interpreted code may still be running past the limit.
func (w *worker) run(ctx context.Context, r request, limit time.Duration) response {
	p, ok := w.cache[r.Hash]
	if !ok {
		if r.Source == nil {
			return response{NeedSource: true}
		}
		var err error
		if p, err = w.load(ctx, r, limit); err != nil {
			o := failed(err)
			if o.Kind == adaptbot.FailTimeout {
				w.die(exitTimeout, o) // initialisers may still be running
			}
			return response{outcome: o}
		}
	}
	if r.Op == opCompile {
		return response{}
	}
	// The tool's calls of tools and its HTTP requests go to the server, one
	// at a time: this process sends nothing to the network itself.
	one := &sync.Mutex{}
	ctx = toolkit.WithSender(ctx, &serverSender{w: w, call: r.ID, one: one})
	ctx = toolkit.WithCaller(ctx, &serverCaller{w: w, call: r.ID, one: one})
	o, finished := p.execute(ctx, r.Input, w.cfg.MaxOutput, cancelGrace, limit)
	if !finished {
		w.die(exitTimeout, o)
	}
	if o.Kind == adaptbot.FailPanic || o.Kind == adaptbot.FailTimeout {
		// The interpreter may have been left mid-statement: load afresh.
		w.evict(r.Hash)
	}
	return response{outcome: o}
}

func (w *worker) load(ctx context.Context, r request, limit time.Duration) (*program, error) {
	p, err := load(ctx, r.Tool, r.Source, limit, os.Stdout)
	if err != nil {
		return nil, err
	}
	if len(w.order) >= w.cfg.CacheSize {
		w.evict(w.order[0])
	}
	w.cache[r.Hash] = p
	w.order = append(w.order, r.Hash)
	return p, nil
}

func (w *worker) evict(hash string) {
	delete(w.cache, hash)
	for i, h := range w.order {
		if h == hash {
			w.order = append(w.order[:i], w.order[i+1:]...)
			break
		}
	}
}

// leaked reports whether the call left goroutines running interpreted code
// (or started by it): there were before goroutines when it began.
func leaked(before int) bool {
	// The goroutine that ran the call may still be on its way out.
	for i := 0; i < 10 && runtime.NumGoroutine() > before; i++ {
		runtime.Gosched()
	}
	if runtime.NumGoroutine() <= before {
		return false
	}
	// More goroutines may be the toolkit's idle connections: look closer.
	for i := 0; i < 3; i++ {
		if !interpretedGoroutines() {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func interpretedGoroutines() bool {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	return bytes.Contains(buf[:n], toolFrames)
}

// watch ends the worker when it runs past its memory or goroutine limit.
// The memory limit is also GOMEMLIMIT and, with headroom, an address-space
// rlimit; the watchdog is what turns most overruns into a clean report.
func (w *worker) watch() {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
	}
	t := time.NewTicker(watchdogEvery)
	defer t.Stop()
	for range t.C {
		if n := runtime.NumGoroutine(); n > w.cfg.MaxGoroutines {
			w.die(exitLimit, outcome{Kind: adaptbot.FailMemory, Msg: fmt.Sprintf("started more goroutines than the limit of %d", w.cfg.MaxGoroutines)})
		}
		metrics.Read(samples)
		var used uint64
		for _, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				used += s.Value.Uint64()
			}
		}
		if int64(used) > w.cfg.MemoryLimit {
			w.die(exitLimit, memoryOutcome(w.cfg.MemoryLimit))
		}
	}
}

func memoryOutcome(limit int64) outcome {
	return outcome{Kind: adaptbot.FailMemory, Msg: fmt.Sprintf("ran past the %s memory limit", sizeString(limit))}
}

// serverCaller is the toolkit.Caller of a call in a worker: it sends the
// tool's calls of other tools to the server, which runs them, and waits
// for the answer. A call's nested calls go one at a time.
type serverCaller struct {
	w    *worker
	call uint64
	one  *sync.Mutex // shared with the call's serverSender
}

// CallTool asks the server to run the tool name and waits for its answer or
// the end of ctx (the call's limit, or the server's cancellation).
func (c *serverCaller) CallTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	c.one.Lock()
	defer c.one.Unlock()
	r, err := c.w.ask(ctx, c.call, nestedCall{Tool: name, Args: args})
	if err != nil {
		return "", fmt.Errorf("calling %s: %w", name, err)
	}
	if r.Failed {
		return "", errors.New(r.Error)
	}
	return r.Output, nil
}

// serverSender is the toolkit.Sender of a call in a worker: it hands the
// tool's HTTP requests to the server, which sends them (with the caller's
// secrets and approvals, which this process never sees), and waits for the
// answer.
type serverSender struct {
	w    *worker
	call uint64
	one  *sync.Mutex
}

// Send asks the server to send req and waits for its answer or the end of
// ctx.
func (s *serverSender) Send(ctx context.Context, req toolkit.Request) (toolkit.Response, error) {
	s.one.Lock()
	defer s.one.Unlock()
	r, err := s.w.ask(ctx, s.call, nestedCall{HTTP: &req})
	if err != nil {
		return toolkit.Response{}, err
	}
	if r.Failed {
		return toolkit.Response{}, &hostError{msg: r.Error, blocked: r.Blocked}
	}
	if r.Response == nil {
		return toolkit.Response{}, errors.New("the server sent no answer")
	}
	return *r.Response, nil
}

// hostError is an error the server gave for a request; it is
// toolkit.ErrBlocked when the egress policy refused it, as it was there.
type hostError struct {
	msg     string
	blocked bool
}

func (e *hostError) Error() string { return e.msg }

func (e *hostError) Is(target error) bool { return e.blocked && target == toolkit.ErrBlocked }

// ask sends the nested call c of call and waits for the server's answer or
// the end of ctx.
func (w *worker) ask(ctx context.Context, call uint64, c nestedCall) (nestedReturn, error) {
	w.nestedMu.Lock()
	w.nestedSeq++
	c.Seq = w.nestedSeq
	ch := make(chan nestedReturn, 1)
	w.nested[c.Seq] = ch
	w.nestedMu.Unlock()
	defer func() {
		w.nestedMu.Lock()
		delete(w.nested, c.Seq)
		w.nestedMu.Unlock()
	}()
	frame := response{ID: call, Call: &c}
	if c.HTTP != nil {
		// The server would take a frame over its limit for a broken worker.
		if b, err := json.Marshal(frame); err != nil || len(b) > maxFrame(w.cfg.MaxOutput) {
			return nestedReturn{}, fmt.Errorf("the request is too large to send (over %d bytes)", maxFrame(w.cfg.MaxOutput))
		}
	}
	if err := w.send(frame); err != nil {
		return nestedReturn{}, fmt.Errorf("the server is gone: %w", err)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return nestedReturn{}, ctx.Err()
	}
}

// hold stops (on) or starts again the clock of call id: a request of it
// waits for a person's answer, or has it.
func (w *worker) hold(id uint64, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.current != id || w.clock == nil {
		return
	}
	if on {
		w.resumes = append(w.resumes, w.clock.pause())
		return
	}
	if n := len(w.resumes); n > 0 {
		resume := w.resumes[n-1]
		w.resumes = w.resumes[:n-1]
		resume()
	}
}

// deliver hands the server's answer to the nested call waiting for it; an
// answer no one waits for (the call gave up) is dropped.
func (w *worker) deliver(r request) {
	if r.Return == nil {
		return
	}
	w.nestedMu.Lock()
	ch := w.nested[r.Return.Seq]
	w.nestedMu.Unlock()
	if ch != nil {
		select {
		case ch <- *r.Return:
		default:
		}
	}
}
