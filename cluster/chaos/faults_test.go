//go:build chaos

package chaos

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The faults, each one at a time; mixed runs three at once.
var (
	replicaKill = fault{"replica_kill", func(f *faultCtx) error {
		// The replica that answered is killed right after its answer:
		// that answer's row must be in the stream all the same.
		if err := f.killAfterAnswer(1); err != nil {
			return err
		}
		time.Sleep(f.tm.hold)
		if err := f.h.replicas[1].start(); err != nil {
			return err
		}
		f.heal()
		return nil
	}}

	workerKill = fault{"worker_kill", func(f *faultCtx) error {
		wait, err := f.killWorkerMidCall(0)
		if err != nil {
			return err
		}
		wait()
		if err := f.h.workers[0].start(); err != nil {
			return err
		}
		f.heal()
		return nil
	}}

	natsPause = fault{"nats_pause", func(f *faultCtx) error {
		f.duringAChange()
		p := f.h.nats.p.cmd.Process
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(10 * time.Second)
		if err := p.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		f.heal()
		return nil
	}}

	natsKill = fault{"nats_kill", func(f *faultCtx) error {
		f.duringAChange()
		f.h.nats.p.kill()
		time.Sleep(f.tm.hold)
		if err := f.h.nats.start(); err != nil {
			return err
		}
		f.heal()
		return nil
	}}

	partitionDrop  = fault{"partition", func(f *faultCtx) error { return f.partition(false) }}
	partitionStall = fault{"partition", func(f *faultCtx) error { return f.partition(true) }}

	mixed = fault{"mixed", func(f *faultCtx) error {
		// A worker dies mid-call, then the replica that answers next, and
		// NATS pauses while both are down.
		wait, err := f.killWorkerMidCall(1)
		if err != nil {
			return err
		}
		if err := f.killAfterAnswer(1); err != nil {
			return err
		}
		p := f.h.nats.p.cmd.Process
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(10 * time.Second)
		if err := p.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		wait()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { errs[0] = f.h.replicas[1].start() })
		wg.Go(func() { errs[1] = f.h.workers[1].start() })
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			return fmt.Errorf("restart: %v, %v", errs[0], errs[1])
		}
		f.heal()
		return nil
	}}
)

// duringAChange waits (5 s at most) until a tool change is in flight, so
// that NATS goes while one is on its way to the bucket: a change
// acknowledged then must reach every replica all the same.
func (f *faultCtx) duringAChange() {
	deadline := time.Now().Add(5 * time.Second)
	for f.h.changing.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond) // somewhere inside it
}

// killAfterAnswer SIGKILLs replica r the moment it has answered a request
// (or after 10 s without one), and marks it killed.
func (f *faultCtx) killAfterAnswer(r int) error {
	rep := f.h.replicas[r]
	f.killed = append(f.killed, r)
	killed := make(chan struct{})
	var once sync.Once
	kill := func(id string) {
		once.Do(func() {
			rep.kill()
			if id != "" {
				f.mu.Lock()
				f.lastAnswers = append(f.lastAnswers, id)
				f.mu.Unlock()
			}
			close(killed)
		})
	}
	hook := func(i int, id string) {
		if i == r {
			kill(id)
		}
	}
	f.l.onAnswer.Store(&hook)
	defer f.l.onAnswer.Store(nil)
	select {
	case <-killed:
	case <-time.After(10 * time.Second):
		f.note("%s answered nothing for 10 s; killed anyway", rep.id)
		kill("")
	}
	return nil
}

// killWorkerMidCall starts acting calls on the fleet replica, waits until
// they have acted and are working, and SIGKILLs worker w; wait waits for
// the calls to end. Each call must have acted once: those on the killed
// worker fail with a clear error, never run again.
func (f *faultCtx) killWorkerMidCall(w int) (wait func(), err error) {
	const calls = 4
	f.l.actMS.Store(4000)
	tokens := make([]string, calls)
	outs := make([]*outcome, calls)
	var wg sync.WaitGroup
	for i := range calls {
		tokens[i] = fmt.Sprintf("%s-w%d-%d-%d", f.name(), w, time.Now().UnixNano(), i)
		wg.Go(func() { outs[i] = f.l.act(tokens[i]) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		acted := 0
		for _, tok := range tokens {
			if f.h.witness.count(tok) > 0 {
				acted++
			}
		}
		if acted == calls {
			break
		}
		if time.Now().After(deadline) {
			f.note("only %d of %d acting calls acted within 30 s", acted, calls)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.workerKilledAt = time.Now()
	f.h.workers[w].p.kill()
	f.killedWorker = true
	return func() {
		wg.Wait()
		f.l.actMS.Store(200)
		for _, o := range outs {
			f.l.keep(o)
		}
		f.mu.Lock()
		f.acts = append(f.acts, outs...)
		f.mu.Unlock()
	}, nil
}

// partition cuts r1 off from NATS (its proxy drops every connection, or
// with stall holds every byte), makes a hand edit of partTool in r1's
// folder, and has r2 modify the same tool, before it heals. The rule
// (docs/cluster.md): the bucket's revisions decide, and an edit made over
// a revision that is no longer the newest loses: r2's acknowledged
// change serves everywhere, and the edit stays in r1's history.
func (f *faultCtx) partition(stall bool) error {
	h := f.h
	r1 := h.replicas[0]
	if stall {
		r1.proxy.Stall()
	} else {
		r1.proxy.Drop()
	}
	time.Sleep(time.Second)
	k := h.version.Add(1)
	hand := counterSource(partTool, "a hand edit on r1", int(k))
	if err := writeTool(filepath.Join(r1.dir, "tools"), partTool, []byte(hand)); err != nil {
		return err
	}
	f.hand = sha(hand)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if d, err := h.digest(0, partTool); err == nil && d == f.hand {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("r1 does not serve its hand edit of %s within 30 s", partTool)
		}
		time.Sleep(50 * time.Millisecond)
	}
	o := h.build(f.l, 1, "modify", partTool)
	f.l.keep(o)
	if !o.answered() {
		// r2 could not change it: the hand edit is the only change, and
		// every replica must serve it.
		f.note("r2's modify of %s was not acknowledged (%d %s); the hand edit must win", partTool, o.status, o.err)
		h.mu.Lock()
		h.expect[partTool] = f.hand
		h.mu.Unlock()
	}
	time.Sleep(f.tm.hold)
	r1.proxy.Heal()
	f.heal()
	return nil
}
