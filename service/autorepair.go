package service

import (
	"context"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/failures"
	"adaptbot/identity"
	"adaptbot/reqid"
)

// Automatic repairs (ADAPTBOT_AUTO_REPAIR): once a tool's serving version
// has failed in RepairAfter distinct ways that a repair may take, the
// server repairs it on its own, as identity.System through the internal
// door, with the same operation a person starts (one build_modify row, one
// trace). In propose mode the repaired version waits for approval; in on
// mode it serves, unless review is on.
//
// A tool failing on purpose, over and over, cannot flood the model or the
// queue: a proposal is considered only when a case is new, at most one
// repair per tool is queued or running, at most one per RepairEvery
// starts, a repair that failed is not tried again until a new case
// arrives, the queue is bounded, and repairs run one at a time.

// autoQueue bounds the tools waiting for an automatic repair.
const autoQueue = 16

type autoState struct {
	mu sync.Mutex
	// busy holds the tools queued or being repaired.
	busy    map[string]bool
	queue   chan string
	noModel sync.Once
}

func newAutoState() autoState {
	return autoState{busy: map[string]bool{}, queue: make(chan string, autoQueue)}
}

// considerRepair starts an automatic repair of tool if its version has
// failed in enough new ways; see above for the limits.
func (s *Service) considerRepair(tool string, version int) {
	l := s.learn
	if l.cfg.AutoRepair == adaptbot.ModeOff || l.cfg.Failures == nil || s.d.Registry == nil {
		return
	}
	l.auto.mu.Lock()
	busy := l.auto.busy[tool]
	l.auto.mu.Unlock()
	if busy {
		return
	}
	e, ok := s.d.Registry.Entry(tool)
	if !ok || e.Version != version || e.PendingVersion != 0 {
		return // an older version's failure, or a version already waits
	}
	st := l.cfg.Failures.Get(tool)
	cases := sinceChange(st, version)
	if len(cases) < l.cfg.RepairAfter {
		return
	}
	if why := s.holdOff(st, cases); why != "" {
		s.d.Log.Debug("automatic repair waits", "tool", tool, "why", why)
		return
	}
	if s.d.Generator == nil || !s.d.Generator.HasModel() {
		l.auto.noModel.Do(func() {
			s.d.Log.Warn("automatic repair does nothing: no model is configured", "tool", tool, "cases", len(cases), "mode", l.cfg.AutoRepair)
		})
		return
	}
	l.auto.mu.Lock()
	defer l.auto.mu.Unlock()
	if l.auto.busy[tool] {
		return
	}
	select {
	case l.auto.queue <- tool:
		l.auto.busy[tool] = true
		s.d.Log.Info("automatic repair queued", "tool", tool, "version", version, "cases", len(cases), "mode", l.cfg.AutoRepair)
	default:
		s.d.Log.Warn("automatic repair not queued: the queue is full", "tool", tool)
	}
}

// holdOff says why an automatic repair of a tool with these cases must
// wait, or "" if it may start: one ran within RepairEvery, or the last
// repair failed and no case has arrived since.
func (s *Service) holdOff(st failures.State, cases []failures.Case) string {
	var lastAuto, last *failures.Repair
	for i := range st.Repairs {
		r := &st.Repairs[i]
		if last == nil || r.At.After(last.At) {
			last = r
		}
		if r.Auto && (lastAuto == nil || r.At.After(lastAuto.At)) {
			lastAuto = r
		}
	}
	if lastAuto != nil && time.Since(lastAuto.At) < s.learn.cfg.RepairEvery {
		return "an automatic repair ran within " + s.learn.cfg.RepairEvery.String()
	}
	if last != nil && !last.OK {
		for _, c := range cases {
			if c.FirstSeen.After(last.At) {
				return ""
			}
		}
		return "the last repair failed, and no new failure case has arrived since"
	}
	return ""
}

// RunLearning runs the automatic repairs considered and the skills due,
// one at a time, until ctx ends. Without it running, none starts.
func (s *Service) RunLearning(ctx context.Context) {
	l := s.learn
	s.seedSkills(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case tool := <-l.auto.queue:
			s.autoRepair(ctx, tool)
			l.auto.mu.Lock()
			delete(l.auto.busy, tool)
			l.auto.mu.Unlock()
		case c := <-l.skills.queue:
			if key, due := s.seeChat(c); due {
				s.proposeSkill(ctx, key)
			}
		}
	}
}

// autoRepair repairs tool as the server, from the cases no repair has
// fixed.
func (s *Service) autoRepair(ctx context.Context, tool string) {
	ctx = identity.With(reqid.WithDoor(ctx, adaptbot.DoorInternal), identity.System)
	p, err := s.prepareRepair(ctx, tool, adaptbot.RepairRequest{}, true)
	res, err := runNow(ctx, adaptbot.Stream{}, p, err)
	switch {
	case err != nil:
		s.d.Log.Warn("automatic repair failed", "tool", tool, "err", err)
	case !res.OK:
		s.d.Log.Warn("automatic repair did not pass its checks; it is not tried again until a new failure case arrives", "tool", tool, "error", res.Error)
	case res.Pending:
		s.d.Log.Info("automatic repair proposed: a version waits for approval", "tool", tool, "version", res.Version)
	default:
		s.d.Log.Info("automatic repair serves", "tool", tool, "version", res.Version)
	}
}
