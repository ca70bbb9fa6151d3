package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	results, err := g.runExamples(ctx, name, t.Code, t.Output, examples, func(Event) {})
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
// error, to report. It runs off the registry's goroutine and stops after ctx
// is done. Tools without examples are skipped.
func (g *Generator) RetestOnChange(ctx context.Context, report func(*ExampleReport, error)) {
	g.opts.Registry.OnChange(func(ev registry.Event) {
		if ctx.Err() != nil || ev.Entry.Origin == registry.Generated {
			return
		}
		if ev.Kind != registry.Added && ev.Kind != registry.Updated {
			return
		}
		go func() {
			r, err := g.TestTool(ctx, ev.Entry.Name)
			if errors.Is(err, ErrNoExamples) {
				return
			}
			report(r, err)
		}()
	})
}
