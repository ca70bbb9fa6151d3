package service

import (
	"context"
	"errors"
	"time"

	"adaptbot"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/traces"
)

// Repair rewrites a tool from the ways it failed in use: the generator gets
// its source, the failing cases and the stored examples, and the new
// version must pass the old examples and turn every case into a result or a
// clear error (generator.Repair). It is a modify: it needs the change
// permission, takes the cluster lock, and its row is a BUILD build_modify
// row. With ADAPTBOT_REVIEW=on the version waits for approval. The cases it
// fixed are marked with the version, and the repair is recorded with the
// tool's cases.
func (s *Service) Repair(ctx context.Context, name string, req adaptbot.RepairRequest, st adaptbot.Stream) (*adaptbot.BuildResult, error) {
	p, err := s.PrepareRepair(ctx, name, req)
	return runNow(ctx, st, p, err)
}

// PrepareRepair begins a repair, refusing at once what Repair would refuse
// before it starts: the caller's role, the tool, the cases, the model or a
// cluster that cannot take changes.
func (s *Service) PrepareRepair(ctx context.Context, name string, req adaptbot.RepairRequest) (adaptbot.Prepared[*adaptbot.BuildResult], error) {
	return s.prepareRepair(ctx, name, req, false)
}

// repairable checks that name can be repaired from the cases req selects,
// now, and returns them with the version they repair.
func (s *Service) repairable(name string, req adaptbot.RepairRequest) ([]failures.Case, int, error) {
	store := s.learn.cfg.Failures
	if store == nil {
		return nil, 0, errNoFailures
	}
	if _, err := s.entry(name); err != nil {
		return nil, 0, err
	}
	t, ok := s.d.Registry.Tool(name)
	if !ok {
		return nil, 0, adaptbot.Errorf(adaptbot.Conflict, "%s has no serving version to repair; fix its file or roll it back first", name)
	}
	cases, err := casesOf(store.Get(name), name, req.Cases, generator.MaxRepairCases)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case s.d.Generator == nil:
		err = errNoGenerator
	case !s.d.Generator.HasModel():
		err = noModel("Repairing tools", llm.ErrNoModel)
	default:
		err = s.writable()
	}
	return cases, t.Version, err
}

// prepareRepair is PrepareRepair, or with auto an automatic one, which in
// propose mode waits for approval whatever the review setting.
func (s *Service) prepareRepair(ctx context.Context, name string, req adaptbot.RepairRequest, auto bool) (adaptbot.Prepared[*adaptbot.BuildResult], error) {
	ctx, o, err := s.start(ctx, "repair", name, identity.Build)
	o.fallback, o.what = adaptbot.Upstream, "Repairing tools"
	greq := generator.Request{Op: generator.Modify, Tool: name, Text: "repair " + name}
	o.row = buildRow(o.row, greq, nil)
	o.rec.Kind, o.rec.Query, o.rec.Tool = traces.Build, greq.Text, name
	var cases []failures.Case
	var from int
	if err == nil {
		cases, from, err = s.repairable(name, req)
	}
	if cases != nil {
		greq.Text = "repair " + name + ": " + describeCases(cases)
		o.row.Query, o.rec.Query = greq.Text, greq.Text
	}
	return prepare(o, err, func(ctx context.Context, st adaptbot.Stream) (*adaptbot.BuildResult, error) {
		return s.repair(ctx, o, greq, cases, from, auto, st.Progress)
	})
}

// repair carries out a repair begun as o, of the cases given, which repair
// version from.
func (s *Service) repair(ctx context.Context, o *op, greq generator.Request, cases []failures.Case, from int, auto bool, progress func(generator.Event)) (*generator.Result, error) {
	name, store := greq.Tool, s.learn.cfg.Failures
	calls, _ := s.d.Generator.Budget()
	o.deadline = s.d.Deadlines.Build + time.Duration(len(cases)*(calls-1))*generator.DefaultExampleTimeout
	ctx, cancel := context.WithTimeout(ctx, o.deadline)
	defer cancel()

	who := identity.From(ctx)
	// The cases earlier repairs fixed without publishing them run again;
	// a case is published as an example only by its one author.
	cases = append(cases, rechecks(store.Get(name), cases, s.d.Registry.Examples(name))...)
	gcases := make([]generator.Case, len(cases))
	ids := make([]string, len(cases))
	for i, c := range cases {
		gcases[i] = generator.Case{ID: c.ID, Input: c.Args, Kind: string(c.Kind), Error: c.Message, Comment: c.Comment, Count: c.Count,
			Private: !publishes(who, c), Recheck: c.FixedIn > 0, Expect: c.Expect}
		ids[i] = c.ID
	}
	// The model gets the cases whole; the caller reads the repair's
	// progress, result and trace without the words of cases not theirs.
	res, err := s.d.Generator.Repair(ctx, generator.RepairRequest{
		Tool: name, Cases: gcases, Hold: auto && s.learn.cfg.AutoRepair == adaptbot.ModePropose,
		Permit: func(generator.Op, string) error { return identity.Permit(who, identity.Build) },
	}, progressFor(who, cases, progress))
	// A repair that ran is recorded, done or failed (a failed one is not
	// tried again automatically until a new case arrives); one that never
	// started (another build of the tool, a client gone) is not.
	if err == nil || !errors.Is(err, context.Canceled) && classify(err, 0, adaptbot.Internal).Kind != adaptbot.Conflict {
		rec := failures.Repair{At: time.Now(), RequestID: o.id, Auto: auto, From: from, Cases: ids}
		if res != nil && res.OK {
			rec.Fixed, rec.Accepted = judged(cases, res.Cases)
		}
		if res != nil {
			rec.Version, rec.Pending, rec.OK, rec.Error = res.Version, res.Pending, res.OK, res.Error
		}
		if err != nil && rec.Error == "" {
			rec.Error = classify(err, o.deadline, adaptbot.Upstream).Msg
		}
		store.AddRepair(name, rec)
		if rec.OK && len(rec.Fixed) > 0 {
			store.Fixed(name, rec.Version, rec.Fixed...) //nolint:errcheck // the cases were just read; one dropped since is no loss
		}
		if rec.OK && len(rec.Accepted) > 0 {
			store.Accept(name, rec.Version, rec.Accepted...) //nolint:errcheck // as above
		}
		if rec.OK {
			keepExpected(store, name, res.Cases)
		}
	}
	if errors.Is(err, generator.ErrNoCases) {
		err = &adaptbot.Error{Kind: adaptbot.Conflict, Err: err, Msg: "there are no failure cases to repair"}
	}
	res = repairFor(who, cases, res)
	if err := o.finishBuild(greq, res, err); err != nil {
		return nil, err
	}
	return res, nil
}

// judged splits the cases a saved repair was given by how its version did
// on them: fixed (a result now, or a clear error where it failed before)
// and accepted (a clear error it was given and kept: the model judged the
// refusal right). A case it still fails is neither.
func judged(cases []failures.Case, results []generator.CaseResult) (fixed, accepted []string) {
	refused := map[string]bool{}
	for _, c := range cases {
		if c.Kind == adaptbot.FailError {
			refused[c.ID] = true
		}
	}
	for _, r := range results {
		switch {
		case !r.OK:
		case refused[r.ID] && r.Outcome == generator.OutcomeError:
			accepted = append(accepted, r.ID)
		default:
			fixed = append(fixed, r.ID)
		}
	}
	return fixed, accepted
}
