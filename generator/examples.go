package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/registry"
)

// TestTool re-runs the stored examples of the tool's serving version in the
// sandbox, as `adaptbot tools test <name>` does and as RetestOnChange does
// after a hand edit. It needs no model. A tool without examples.json returns
// ErrNoExamples; an unknown one registry.ErrNotFound. A failing example is
// not an error: the report says which and why.
func (g *Generator) TestTool(ctx context.Context, name string) (*ExampleReport, error) {
	if err := contract.ValidName(name); err != nil {
		return nil, err
	}
	t, ok := g.opts.Registry.Tool(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", registry.ErrNotFound, name)
	}
	raw := g.opts.Registry.Examples(name)
	if raw == nil {
		return nil, fmt.Errorf("%s: %w", name, ErrNoExamples)
	}
	var examples []Example
	if err := json.Unmarshal(raw, &examples); err != nil {
		return nil, fmt.Errorf("%s: %s is not a JSON array of examples: %w", name, registry.ExamplesFile, err)
	}
	if len(examples) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrNoExamples)
	}
	results, _, err := g.runExamples(ctx, name, t.Code, t.Output, examples, func(Event) {})
	if err != nil {
		return nil, err
	}
	report := &ExampleReport{Tool: name, Version: t.Version, OK: true, Results: results}
	for _, r := range results {
		report.OK = report.OK && r.OK
	}
	return report, nil
}

// RetestOnChange re-runs a tool's stored examples whenever its source changes
// other than through a build (a hand edit picked up by the registry's
// watcher, say: builds have just run them), and passes each report, or the
// error, to report. After any change of a tool — a build's included — it
// also re-runs the examples of every tool that uses it, directly or through
// others, and reports each; a failure becomes a warning on both tools'
// entries (registry.Entry.Warning: the changed tool breaks them, they fail
// since it changed), and a pass clears it. It runs off the registry's
// goroutine and stops after ctx is done; the function it returns waits,
// once ctx is done, until the runs under way have ended. Tools without
// examples are skipped.
func (g *Generator) RetestOnChange(ctx context.Context, report func(*ExampleReport, error)) (wait func()) {
	var mu sync.Mutex // orders Add after Wait began: none starts once ctx is done
	var running sync.WaitGroup
	g.opts.Registry.OnChange(func(ev registry.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil || (ev.Kind != registry.Added && ev.Kind != registry.Updated) {
			return
		}
		name, own := ev.Entry.Name, ev.Entry.Origin != adaptbot.OriginGenerated
		running.Go(func() {
			if own {
				r, err := g.TestTool(ctx, name)
				if !errors.Is(err, ErrNoExamples) {
					report(r, err)
				}
			}
			g.retestDependents(ctx, name, report)
		})
	})
	return func() {
		mu.Lock()
		mu.Unlock() //nolint:staticcheck // an empty critical section: no Add is under way
		running.Wait()
	}
}

// retestDependents runs the examples of the tools that use name, as it now
// serves, and keeps the outcome as warnings on the entries.
func (g *Generator) retestDependents(ctx context.Context, name string, report func(*ExampleReport, error)) {
	t, ok := g.opts.Registry.Tool(name)
	if !ok {
		return
	}
	reports, err := g.checkDependents(ctx, name, t.Code, nil, func(Event) {})
	if err != nil {
		report(nil, fmt.Errorf("the examples of the tools that use %s: %w", name, err))
		return
	}
	if len(reports) == 0 {
		return
	}
	for i := range reports {
		r := &reports[i]
		if r.Skipped != "" {
			continue
		}
		report(r, nil)
		if ctx.Err() != nil {
			return // stopped: keep what the registry says
		}
		warning := ""
		if !r.OK {
			warning = fmt.Sprintf("fails its examples since %s changed (version %d): %s", name, t.Version, forPeople(r.Failures()[0]))
		}
		g.warn(r.Tool, warning)
	}
	if ctx.Err() != nil {
		return
	}
	warning := ""
	if failed := broken(reports); len(failed) > 0 {
		warning = fmt.Sprintf("version %d breaks the tools that use it: %s", t.Version, brokenSummary(failed))
	}
	g.warn(name, warning)
}

// warn sets a tool's warning, logging what could not be kept.
func (g *Generator) warn(name, warning string) {
	if err := g.opts.Registry.SetWarning(name, warning); err != nil && !errors.Is(err, registry.ErrNotFound) {
		g.opts.Log.Warn("generator: warning not kept", "tool", name, "err", err)
	}
}
