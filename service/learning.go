package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/failures"
	"adaptbot/identity"
	"adaptbot/toolbox"
)

// Learning from use: every failed call of a local tool is recorded as a
// failure case (failures.Store), whatever door it came through; people see
// the cases on the tool's page and start a repair from them (repair.go);
// once a tool has failed in enough distinct ways since its last change, the
// server proposes a repair on its own (autorepair.go); and people rate
// answers (feedback.go).
//
// Recording costs nothing on the success path: only a failed call reaches
// RecordFailure.

// Defaults of Learning's fields left at zero.
const (
	DefaultRepairAfter = 3
	DefaultRepairEvery = time.Hour
)

// Learning configures what the service learns from use.
type Learning struct {
	// Failures keeps the failure cases; nil records none (and the failure
	// and repair operations say so).
	Failures *failures.Store
	// AutoRepair is the mode of automatic repairs; empty is off.
	AutoRepair adaptbot.Mode
	// RepairAfter is how many distinct failure cases of a tool's serving
	// version start an automatic repair (DefaultRepairAfter).
	RepairAfter int
	// RepairEvery is the least time between automatic repairs of one tool
	// (DefaultRepairEvery).
	RepairEvery time.Duration
	// Skills is the mode of skills proposed from recurring chains of
	// tools; empty is off. SkillAfter is how often a chain recurs before
	// one is proposed (DefaultSkillAfter).
	Skills     adaptbot.Mode
	SkillAfter int
}

// learning is the service's state for learning from use.
type learning struct {
	cfg Learning
	// feedback serializes ratings, so an answer is rated once.
	feedback sync.Mutex
	auto     autoState
	skills   skillState
}

func newLearning(cfg Learning) *learning {
	if cfg.AutoRepair == "" {
		cfg.AutoRepair = adaptbot.ModeOff
	}
	if cfg.RepairAfter <= 0 {
		cfg.RepairAfter = DefaultRepairAfter
	}
	if cfg.RepairEvery <= 0 {
		cfg.RepairEvery = DefaultRepairEvery
	}
	if cfg.Skills == "" {
		cfg.Skills = adaptbot.ModeOff
	}
	if cfg.SkillAfter <= 0 {
		cfg.SkillAfter = DefaultSkillAfter
	}
	return &learning{cfg: cfg, auto: newAutoState(), skills: newSkillState()}
}

// ToolFailure is one failed call of a tool: what the toolbox's observer
// reports for every call, nested ones included.
type ToolFailure struct {
	Tool    string
	Version int
	Args    json.RawMessage
	// Err is the call's error; its kind and words make the case.
	Err       error
	RequestID string
	// Author is the caller's pseudonym: the case shows its arguments and
	// request to them (and admins) alone.
	Author string
}

// RecordFailure records a failed call of a local tool as a failure case,
// and considers an automatic repair when the case is new. Failures that
// are not the tool's (a caller that went away, a sandbox that is down,
// source that does not compile), of external tools, or of tools the
// registry does not hold are not recorded. It is cheap (see
// failures.BenchmarkRecord) and never blocks on a write.
func (s *Service) RecordFailure(f ToolFailure) {
	st := s.learn.cfg.Failures
	if st == nil {
		return
	}
	kind := failures.CaseKind(f.Err)
	if !failures.Known(kind) {
		return
	}
	if _, _, remote := toolbox.SplitName(f.Tool); remote || s.d.Registry == nil {
		return
	}
	if _, ok := s.d.Registry.Entry(f.Tool); !ok {
		return
	}
	_, fresh := st.Record(failures.Call{Tool: f.Tool, Version: f.Version, Args: f.Args, Kind: kind, Message: failures.Message(f.Err), RequestID: f.RequestID, Author: f.Author})
	if fresh {
		s.considerRepair(f.Tool, f.Version)
	}
}

// observeCall records a failed call of a tool, from any door and at any
// depth (a tool's call of another tool included): the toolbox's observer.
// A call its caller gave up on is not the tool's failure, and neither are
// arguments a person sent that the tool's schema refused (a direct run:
// the run form, the API, the CLI, an MCP call), which the tool never saw.
// The schema's refusal of a model's arguments in a chat, or of a tool's
// arguments to another tool, is kept as a case of kind invalid_arguments:
// evidence that the schema may be unclear, for people to read; no repair
// takes it, and it counts toward none (failures.Repairable).
func (s *Service) observeCall(ctx context.Context, ev toolbox.CallEvent) {
	// A request its person denied, let expire or could not be asked
	// about, or one naming a secret they have not set, is no fault of the
	// tool's: no case, and nothing toward an automatic repair.
	if ev.Err == nil || ctx.Err() != nil || ev.HeldBack {
		return
	}
	if _, refused := errors.AsType[*toolbox.ArgsError](ev.Err); refused && ev.Depth == 0 && ctx.Value(directRun{}) != nil {
		return
	}
	s.RecordFailure(ToolFailure{Tool: ev.Tool, Version: ev.Version, Args: ev.Args, Err: ev.Err, RequestID: ev.RequestID,
		Author: identity.From(ctx).Pseudonym})
}

// errNoFailures is the error of a failure operation on a server that keeps
// none.
var errNoFailures = &adaptbot.Error{Kind: adaptbot.Unavailable, Msg: "failure cases are not kept on this server"}

// Failures returns a tool's failure cases and repairs. A case's words (its
// arguments, comment and request) are shown to their authors and to admins
// alone (caseFor); anyone else who may read tools sees the rest.
func (s *Service) Failures(ctx context.Context, name string) (*adaptbot.FailureReport, error) {
	_, o, err := s.read(ctx, "failures", identity.ReadTools)
	if err == nil {
		_, err = s.entry(name)
	}
	if err == nil && s.learn.cfg.Failures == nil {
		err = errNoFailures
	}
	if err != nil {
		return nil, o.finish(err)
	}
	return s.failureReport(o.who, name), o.finish(nil)
}

// failureReport is name's report as who may read it.
func (s *Service) failureReport(who identity.Identity, name string) *adaptbot.FailureReport {
	st := s.learn.cfg.Failures.Get(name)
	e, _ := s.d.Registry.Entry(name)
	rep := &adaptbot.FailureReport{Tool: name, Version: e.Version, PendingVersion: e.PendingVersion, Cases: st.Cases, Repairs: st.Repairs,
		Keep: s.learn.cfg.Failures.Keep(), Auto: adaptbot.AutoStatus{Mode: s.learn.cfg.AutoRepair, After: s.learn.cfg.RepairAfter,
			Every: s.learn.cfg.RepairEvery.String(), SinceChange: len(sinceChange(st, e.Version))}}
	if rep.Cases == nil {
		rep.Cases = []failures.Case{}
	}
	if rep.Repairs == nil {
		rep.Repairs = []failures.Repair{}
	}
	rep.Open, rep.Errors, rep.Unconfirmed = tally(st.Cases)
	rep.Repairs = repairsFor(who, st.Cases, rep.Repairs)
	for i, c := range rep.Cases {
		rep.Cases[i] = caseFor(who, c)
	}
	for _, c := range st.Cases {
		if c.Status == failures.Accepted {
			rep.Accepted++
		}
	}
	return rep
}

// tally counts cases as a report shows them: open failures no repair has
// fixed, clear errors none has judged, and unconfirmed thumbs-downs.
func tally(cs []failures.Case) (open, errs, unconfirmed int) {
	for _, c := range cs {
		switch {
		case c.Status == failures.Unconfirmed:
			unconfirmed++
		case c.FixedIn > 0, c.Status == failures.Accepted:
		case c.Failing():
			open++
		case c.Repairable():
			errs++
		}
	}
	return open, errs, unconfirmed
}

// sinceChange are the cases of version v that no repair has judged:
// failures and clear errors alike (a tool that refuses three distinct
// inputs may lack a capability; the repair's model decides), never an
// accepted refusal. They count toward an automatic repair.
func sinceChange(st failures.State, v int) []failures.Case {
	var out []failures.Case
	for _, c := range st.Cases {
		if c.Version == v && c.Repairable() && c.FixedIn == 0 {
			out = append(out, c)
		}
	}
	return out
}

// FailureSummary counts every tool's failure cases, for the list of tools.
func (s *Service) FailureSummary(ctx context.Context) (*adaptbot.FailureSummary, error) {
	_, o, err := s.read(ctx, "failure summary", identity.ReadTools)
	if err != nil {
		return nil, o.finish(err)
	}
	out := &adaptbot.FailureSummary{Tools: map[string]adaptbot.FailureCount{}}
	if s.learn.cfg.Failures == nil {
		return out, o.finish(nil)
	}
	for name, st := range s.learn.cfg.Failures.Tools() {
		var fc adaptbot.FailureCount
		for _, c := range st.Cases {
			fc.Failures += c.Count
			if c.LastSeen.After(fc.LastSeen) {
				fc.LastSeen = c.LastSeen
			}
		}
		fc.Open, fc.Errors, fc.Unconfirmed = tally(st.Cases)
		if len(st.Cases) > 0 {
			out.Tools[name] = fc
		}
	}
	return out, o.finish(nil)
}

// ConfirmCase makes a thumbs-down case open: the answer was wrong because
// of the tool, and a repair may take it. It needs the change permission.
func (s *Service) ConfirmCase(ctx context.Context, name, id string) (*adaptbot.FailureReport, error) {
	return s.triage(ctx, "confirm failure case", name, id, func(st *failures.Store) error { return st.Confirm(name, id) })
}

// DismissCase removes a case: a thumbs-down that was not the tool's fault.
// It needs the change permission.
func (s *Service) DismissCase(ctx context.Context, name, id string) (*adaptbot.FailureReport, error) {
	return s.triage(ctx, "dismiss failure case", name, id, func(st *failures.Store) error { return st.Dismiss(name, id) })
}

// triage is a person's decision on one case. It writes no row: it changes
// no tool, only what a later repair is given.
func (s *Service) triage(ctx context.Context, span, name, id string, change func(*failures.Store) error) (*adaptbot.FailureReport, error) {
	_, o, err := s.read(ctx, span, identity.Build)
	if err == nil {
		_, err = s.entry(name)
	}
	if err == nil && s.learn.cfg.Failures == nil {
		err = errNoFailures
	}
	if err == nil {
		err = change(s.learn.cfg.Failures)
		if errors.Is(err, failures.ErrNoCase) {
			err = adaptbot.Errorf(adaptbot.NotFound, "%s has no failure case %s; GET /api/tools/%s/failures lists them", name, id, name)
		}
	}
	if err != nil {
		return nil, o.finish(err)
	}
	s.d.Log.Info("failure case triaged", "tool", name, "case", id, "what", span, "request_id", o.id)
	return s.failureReport(o.who, name), o.finish(nil)
}

// casesOf picks the cases a repair of name takes: those asked for by ID,
// or else every case no repair has judged, failures and clear errors
// alike, newest first, at most generator.MaxRepairCases.
func casesOf(st failures.State, name string, ids []string, most int) ([]failures.Case, error) {
	if len(ids) == 0 {
		var out []failures.Case
		for _, c := range st.Cases {
			if c.Repairable() && c.FixedIn == 0 && len(out) < most {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil, adaptbot.Errorf(adaptbot.Conflict, "%s has no open failure cases to repair: a repair starts from the ways a tool failed or refused in use (GET /api/tools/%s/failures lists them)", name, name)
		}
		return out, nil
	}
	if len(ids) > most {
		return nil, adaptbot.Errorf(adaptbot.Invalid, "a repair takes at most %d failure cases, not %d", most, len(ids))
	}
	byID := map[string]failures.Case{}
	for _, c := range st.Cases {
		byID[c.ID] = c
	}
	out := make([]failures.Case, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		c, ok := byID[id]
		switch {
		case seen[id]:
			continue
		case !ok:
			return nil, adaptbot.Errorf(adaptbot.Invalid, "%s has no failure case %q; GET /api/tools/%s/failures lists them", name, id, name)
		case c.Status == failures.Unconfirmed:
			return nil, adaptbot.Errorf(adaptbot.Invalid, "failure case %s is a thumbs-down nobody has confirmed yet: confirm it on the tool's page first", id)
		case !c.Exact:
			return nil, adaptbot.Errorf(adaptbot.Invalid, "failure case %s cannot be run again: its arguments were not a JSON object of at most %d bytes", id, failures.MaxArgs)
		case !failures.Repairable(c.Kind):
			return nil, adaptbot.Errorf(adaptbot.Invalid, "failure case %s is of kind %s: the caller's arguments were wrong, which no repair of the tool can fix", id, c.Kind)
		}
		seen[id] = true
		out = append(out, c)
	}
	return out, nil
}

// describeCases lists cases for a row's query: "3 failure cases (a1, b2, c3)".
func describeCases(cs []failures.Case) string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return fmt.Sprintf("%d failure case%s (%s)", len(cs), clip.Plural(len(cs)), joinMax(ids, 10))
}

func joinMax(xs []string, n int) string {
	out := ""
	for i, x := range xs {
		if i == n {
			return out + ", …"
		}
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
