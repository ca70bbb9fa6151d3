//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// timing is how long each part of a round lasts.
type timing struct {
	clients      int
	before, post time.Duration // load before the fault, and after it heals
	hold         time.Duration // how long a fault lasts (a pause lasts 10 s)
}

// faultCtx is what a fault is given: the cluster, the load, and the mark
// of the moment it healed.
type faultCtx struct {
	h      *harness
	l      *load
	tm     timing
	fault  string
	round  int
	healed time.Time
	// killed are the replicas the fault killed; killedWorker says it
	// killed a fleet worker.
	killed         []int
	killedWorker   bool
	workerKilledAt time.Time
	// hand is the digest of a hand edit made on a replica cut off.
	hand string
	// lastAnswers are the requests a replica answered just before it was
	// killed.
	lastAnswers []string
	// spare are the replicas whose failure cases a fault does not risk
	// (it kills none of them): the suite checks theirs.
	spare []int
	// acts are the acting calls the fault made itself.
	acts []*outcome
	// notes say what the fault saw, for the report's log.
	notes []string
	mu    sync.Mutex
}

func (f *faultCtx) heal() { f.healed = time.Now() }

func (f *faultCtx) name() string { return fmt.Sprintf("%s%d", f.fault, f.round) }

func (f *faultCtx) note(format string, args ...any) {
	f.mu.Lock()
	f.notes = append(f.notes, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

// fault is one kind of fault: run injects it, holds it, and heals it
// (calling heal at the moment it is healed).
type fault struct {
	name string
	run  func(f *faultCtx) error
}

// result is one round's figures, as the report holds them.
type result struct {
	Fault       string  `json:"fault"`
	Sent        int     `json:"sent"`
	Answered    int     `json:"answered"`
	Refused     int     `json:"refused"`
	Failed      int     `json:"failed"`
	Errors500   int     `json:"errors_500"`
	RowsFound   int     `json:"rows_found"`
	RowsLost    int     `json:"rows_lost"`
	RowsDoubled int     `json:"rows_doubled"`
	ConvergeS   float64 `json:"converge_s"`
	P99During   float64 `json:"p99_ms_during"`
	P99After    float64 `json:"p99_ms_after"`
}

// changer changes counterTool through the replicas that are up, one change
// at a time, until stopped: builds, modifies, rollbacks and deletes.
func (h *harness) changer(l *load) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
		turn := 0
		for {
			select {
			case <-done:
				return
			default:
			}
			up := h.upReplicas()
			if len(up) == 0 {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			r := up[turn%len(up)]
			turn++
			cur, known := h.expected()[counterTool]
			var o *outcome
			h.changing.Add(1)
			switch p := rng.IntN(100); {
			case !known || cur == "":
				o = h.build(l, r, "create", counterTool)
			case p < 60:
				o = h.build(l, r, "modify", counterTool)
			case p < 80:
				o = h.rollback(l, r, counterTool)
			default:
				o = l.do(r, "change-delete", "DELETE", "/api/tools/"+counterTool, "", false)
				if o.status == 200 {
					o.ok = true
					if err := h.acknowledged(r, counterTool); err != nil {
						h.t.Logf("after a delete on %s: %v", h.replicas[r].id, err)
					}
				}
			}
			h.changing.Add(-1)
			l.keep(o)
			time.Sleep(300 * time.Millisecond)
		}
	})
	return func() { close(done); wg.Wait() }
}

// rollback rolls tool back on replica r to the newest kept version that
// does not serve now.
func (h *harness) rollback(l *load, r int, tool string) *outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var vs struct {
		Versions []struct {
			Version int  `json:"version"`
			Current bool `json:"current"`
		} `json:"versions"`
	}
	if code, err := getJSON(ctx, h.replicas[r].URL()+"/api/tools/"+tool+"/versions", &vs); err != nil || code != 200 {
		return h.build(l, r, "modify", tool)
	}
	to := 0
	for _, v := range vs.Versions {
		if !v.Current {
			to = v.Version
		}
	}
	if to == 0 {
		return h.build(l, r, "modify", tool)
	}
	o := l.do(r, "change-rollback", "POST", "/api/tools/"+tool+"/rollback", fmt.Sprintf(`{"version": %d}`, to), false)
	if o.status == 200 {
		o.ok = true
		if err := h.acknowledged(r, tool); err != nil {
			h.t.Logf("after a rollback on %s: %v", h.replicas[r].id, err)
		}
	}
	return o
}
