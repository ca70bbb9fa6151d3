package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/contract"
	"adaptbot/llm"
	"adaptbot/registry"
)

// decide settles the operation and the tool's name, asking the model unless
// the request names both, claims the name for this build, and refuses what
// cannot be done: a create of a name that exists, a modify or delete of one
// that does not.
func (g *Generator) decide(ctx context.Context, b *build) (*build, error) {
	b.emit(Event{Stage: StageDecide, Message: "working out what to build"})
	b.op = Op(strings.ToLower(strings.TrimSpace(string(b.op))))
	b.summary = strings.TrimSpace(b.req.Text)
	if s := strings.TrimSpace(b.req.Summary); s != "" {
		b.summary = s
	}
	if (b.op == "" || b.name == "") && strings.TrimSpace(b.req.Text) == "" {
		b.failure = "The request is empty: say what the tool should do."
		return b, nil
	}
	if b.op == "" || b.name == "" {
		raw, err := llm.Structured(ctx, g.opts.Model, decideMessages(b.req.Text, g.opts.Registry.List()), decideFunction)
		if err != nil {
			return b, err
		}
		var d struct {
			Op      string `json:"op"`
			Tool    string `json:"tool"`
			Summary string `json:"summary"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return b, fmt.Errorf("decide_build reply %s: %w", clipText(string(raw)), err)
		}
		if b.op == "" {
			b.op = Op(strings.ToLower(strings.TrimSpace(d.Op)))
		}
		if b.name == "" {
			b.name = d.Tool
		}
		if s := strings.TrimSpace(d.Summary); s != "" {
			b.summary = s
		}
	}
	asked := b.name
	b.name = toolName(asked)
	if b.summary == "" {
		b.summary = fmt.Sprintf("%s the tool %s", b.op, b.name)
	}
	if err := contract.ValidName(b.name); err != nil {
		b.failure = fmt.Sprintf("%q cannot name a tool: use lowercase letters, digits and underscores, starting with a letter.", asked)
		return b, nil
	}
	switch b.op {
	case Create, Modify, Delete:
	default:
		b.failure = fmt.Sprintf("I could not tell whether to create, modify or delete a tool (got %q); please rephrase the request.", b.op)
		return b, nil
	}
	// A reserved name makes nothing; a tool that has one already (made
	// before the word was reserved) may still be deleted.
	if err := adaptbot.ReservedName(b.name); err != nil && b.op != Delete {
		b.failure = err.Error() + ". Ask for the tool under another name."
		if b.op == Modify {
			b.failure = fmt.Sprintf("%v. The tool %s has it from before, so it does not serve and is not changed: build it again under another name, then delete %s.", err, b.name, b.name)
		}
		return b, nil
	}
	if b.req.Permit != nil {
		if err := b.req.Permit(b.op, b.name); err != nil {
			return b, err
		}
	}
	if err := g.lock(b.name); err != nil {
		return b, err
	}
	b.locked = true
	if g.opts.Claim != nil {
		release, err := g.opts.Claim(ctx, b.name)
		if err != nil {
			return b, err
		}
		b.release = release
	}

	_, listed := g.opts.Registry.Entry(b.name)
	switch b.op {
	case Create:
		if listed {
			// A create never replaces a tool: that is what a modify is for,
			// and it should be asked for by name.
			b.failure = fmt.Sprintf("A tool named %s already exists. Ask to change it (\"make %s also …\"), or ask for a tool with another name.", b.name, b.name)
		}
	case Modify:
		t, ok := g.opts.Registry.Tool(b.name)
		switch {
		case !listed:
			b.failure = fmt.Sprintf("There is no tool named %s to change. %s", b.name, g.existing())
		case !ok:
			b.failure = fmt.Sprintf("%s has no working version to change; fix its file or roll it back first.", b.name)
		}
		b.current = t
	case Delete:
		if !listed {
			b.failure = fmt.Sprintf("There is no tool named %s to delete. %s", b.name, g.existing())
		}
	}
	return b, nil
}

// existing lists the tools' names for a message that names the wrong one.
func (g *Generator) existing() string {
	var names []string
	for _, e := range g.opts.Registry.List() {
		names = append(names, e.Name)
	}
	if len(names) == 0 {
		return "There are no tools yet."
	}
	return "The tools are: " + strings.Join(names, ", ") + "."
}

var notName = regexp.MustCompile(`[^a-z0-9_]+`)

// toolName turns what a model calls a tool ("Roman-Numerals", "roman numerals")
// into snake_case. ValidName still has the last word: this never makes a
// name that could leave tools/.
func toolName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = notName.ReplaceAllString(s, "_")
	s = strings.Trim(s, "_")
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		s = "tool_" + s
	}
	return s
}

// create asks the model for a new tool, showing it the tools it may call.
func (g *Generator) create(ctx context.Context, b *build) (*build, error) {
	b.system = writeSystem(g.categories())
	mine := g.callerSecrets(ctx, b)
	b.task = createTask(b.name, b.summary, b.req.Text, g.callables(ctx, b.name, b.summary+"\n"+b.req.Text, nil), mine)
	return g.write(ctx, b, b.task, StageWrite, "writing the code")
}

// modify asks the model for a new version of a serving tool, showing it the
// tools it may call (those it calls already first).
func (g *Generator) modify(ctx context.Context, b *build) (*build, error) {
	b.system = writeSystem(g.categories())
	if fix := b.req.fix; fix != nil {
		b.task = repairCasesTask(b.current, fix.cases, g.opts.Registry.Examples(b.name))
		return g.write(ctx, b, b.task, StageWrite, "writing the repair")
	}
	e, _ := g.opts.Registry.Entry(b.name)
	mine := g.callerSecrets(ctx, b)
	b.task = modifyTask(b.current, b.summary, b.req.Text, g.opts.Registry.Examples(b.name),
		g.callables(ctx, b.name, b.summary+"\n"+b.req.Text, e.Uses), mine)
	return g.write(ctx, b, b.task, StageWrite, "writing the code")
}

// repair sends the last attempt back with the gate's exact problems.
func (g *Generator) repair(ctx context.Context, b *build) (*build, error) {
	prompt := repairTask(b.task, b.attempt, g.opts.MaxAttempts, b.verdict.source, b.verdict.problems, b.cand.Examples)
	return g.write(ctx, b, prompt, StageRepair, "repairing")
}

// write is one attempt: one model call, its reply kept as the candidate.
func (g *Generator) write(ctx context.Context, b *build, task, stage, doing string) (*build, error) {
	b.attempt++
	ev := Event{Stage: stage, Message: fmt.Sprintf("%s (attempt %d of %d)", doing, b.attempt, g.opts.MaxAttempts),
		Attempt: b.attempt, Of: g.opts.MaxAttempts}
	if stage == StageRepair {
		ev.Problems = b.verdict.problems
	} else {
		ev.Summary = b.summary // what is being built, now that it is decided
	}
	b.emit(ev)
	resp, err := g.opts.Model.Generate(ctx, llm.Request{
		Messages:  []llm.Message{{Role: llm.System, Content: b.system}, {Role: llm.User, Content: task}},
		Functions: []llm.Function{writeToolFunction},
		Force:     writeToolName,
	})
	if err != nil {
		return b, fmt.Errorf("attempt %d: %w", b.attempt, err)
	}
	b.cand = parseReply(resp)
	return b, nil
}

// check runs the candidate through the gate and logs the attempt. A modify
// is held to the tool's stored examples too: those whose input the model
// did not send again still run, so a change cannot drop what the tool did.
func (g *Generator) check(ctx context.Context, b *build) (*build, error) {
	// The model's examples that copy people's private inputs are left out
	// (private.go); the stored ones are kept as they are.
	var dropped int
	b.cand.Examples, dropped = withoutPrivate(b.cand.Examples, privateInputs(b.req))
	switch {
	case b.req.fix != nil:
		b.cand.Examples = keepExamples(b.cand.Examples, g.opts.Registry.Examples(b.name), sameExample)
	case b.op == Modify:
		b.cand.Examples = keepExamples(b.cand.Examples, g.opts.Registry.Examples(b.name), sameInput)
	}
	emit := func(ev Event) {
		ev.Attempt, ev.Of = b.attempt, g.opts.MaxAttempts
		b.emit(ev)
	}
	v, err := g.gate(ctx, b.name, b.cand, emit)
	if err != nil {
		return b, err
	}
	if fix := b.req.fix; fix != nil && v.tool != nil {
		// A repair passes the gate and, on top, every failing case.
		results, problems, err := g.checkCases(ctx, b.name, v.tool, fix.cases, emit)
		if err != nil {
			return b, err
		}
		fix.results = results
		if len(problems) > 0 {
			v.tool, v.problems = nil, problems
		}
	}
	if dropped > 0 && v.tool == nil {
		v.problems = append([]string{privateProblem(dropped)}, v.problems...)
	}
	b.breaks, b.dependents = false, nil // this attempt's, not an earlier one's
	if v.tool != nil && b.op == Modify {
		// The tools that use this one must still pass their examples with
		// the new version in its place, before it serves.
		reports, err := g.checkDependents(ctx, b.name, v.tool.source, v.tool.spec, emit)
		if err != nil {
			return b, err
		}
		b.dependents = reports
		if failed := broken(reports); len(failed) > 0 {
			b.breaks = true
			if !g.opts.Registry.Review() {
				// A repair may keep what they rely on; with review on, a
				// person decides, with the report in hand.
				v.problems, v.tool = dependentProblems(b.name, failed), nil
			}
		}
	}
	b.verdict = v
	b.log = append(b.log, Attempt{Number: b.attempt, Errors: v.problems, Source: v.source, Fixed: v.fixed})
	return b, nil
}

// register saves the checked tool with its examples as the tool's next
// version; the registry checks it once more and snapshots it in history.
func (g *Generator) register(ctx context.Context, b *build) (*build, error) {
	b.emit(Event{Stage: StageRegister, Message: "saving the tool"})
	if _, exists := g.opts.Registry.Entry(b.name); b.op == Create && exists {
		b.failure = fmt.Sprintf("A tool named %s appeared while this one was being built; nothing was saved.", b.name)
		return b, nil
	}
	tool := b.verdict.tool
	category := strings.ToLower(b.cand.Category)
	if category == "" {
		category = tool.spec.Category
	}
	if category == "" {
		category = b.current.Category // a modify keeps its category unless changed
	}
	o := registry.PutOptions{Origin: adaptbot.OriginGenerated, Category: category, Examples: encodeExamples(tool.examples), Hold: b.req.Hold, Note: b.req.Note}
	if fix := b.req.fix; fix != nil {
		// The cases that now give a result are regression tests from now
		// on; the version's note says what the repair fixed.
		var more []Example
		more, fix.results = fixedExamples(tool.examples, fix.cases, fix.results)
		o.Examples = encodeExamples(append(tool.examples, more...))
		o.Hold, o.Note = o.Hold || fix.hold, repairNote(fix.results)
	}
	e, err := g.opts.Registry.Put(ctx, b.name, tool.source, o)
	if err != nil {
		if ctx.Err() != nil {
			return b, err
		}
		b.failure = fmt.Sprintf("The registry refused %s: %s. Nothing was saved.", b.name, clipText(err.Error()))
		return b, nil
	}
	b.entry = e
	if b.breaks && e.Status == registry.Pending {
		warning := fmt.Sprintf("version %d (waiting for approval) breaks the tools that use it: %s", e.PendingVersion, brokenSummary(broken(b.dependents)))
		if err := g.opts.Registry.SetWarning(b.name, warning); err != nil {
			g.opts.Log.Warn("generator: warning not kept", "tool", b.name, "err", err)
		}
	}
	return b, nil
}

// delete removes the tool from serving; its versions stay in history. A
// tool that others use is deleted only with Request.Force: otherwise the
// *registry.InUseError (which names them) is the build's error.
func (g *Generator) delete(ctx context.Context, b *build) (*build, error) {
	b.emit(Event{Stage: StageDelete, Message: "deleting " + b.name})
	e, deps, err := g.opts.Registry.Remove(ctx, b.name, b.req.Force)
	if errors.Is(err, registry.ErrNotFound) {
		b.failure = fmt.Sprintf("There is no tool named %s to delete.", b.name)
		return b, nil
	}
	if err != nil {
		return b, err
	}
	b.entry = e
	if len(deps) > 0 {
		b.emit(Event{Stage: StageDelete, Message: fmt.Sprintf("deleted although %s use it: they are broken until it is back", strings.Join(deps, ", "))})
	}
	return b, nil
}

// reject words a refused build for people, if decide has not already.
func (g *Generator) reject(_ context.Context, b *build) (*build, error) {
	if b.failure != "" {
		return b, nil
	}
	last := "it did not pass its checks"
	if n := len(b.log); n > 0 && len(b.log[n-1].Errors) > 0 {
		last = forPeople(b.log[n-1].Errors[0])
	}
	verb, kept := "create", "Nothing was saved."
	if b.op == Modify {
		verb, kept = "change", fmt.Sprintf("Nothing was changed: version %d keeps serving.", b.current.Version)
	}
	if b.breaks {
		b.failure = fmt.Sprintf("I could not change %s: after %d attempts the new version still breaks the tools that use it: %s. %s",
			b.name, b.attempt, brokenSummary(broken(b.dependents)), kept)
		return b, nil
	}
	b.failure = fmt.Sprintf("I could not %s %s: after %d attempts the code still fails its checks (%s). %s",
		verb, b.name, b.attempt, strings.TrimSuffix(last, "."), kept)
	return b, nil
}

// keepExamples adds to sent the stored examples that sent does not repeat,
// as key tells them apart. By input (sameInput), sending an input again is
// how a model changes what it expects; by the whole example (sameExample),
// a repair may add examples, never change what an old one expects.
func keepExamples(sent []Example, stored []byte, key func(Example) string) []Example {
	var old []Example
	if json.Unmarshal(stored, &old) != nil {
		return sent
	}
	have := map[string]bool{}
	for _, e := range sent {
		have[key(e)] = true
	}
	out := sent
	for _, e := range old {
		if !have[key(e)] {
			out = append(out, e)
		}
	}
	return out
}

// sameInput keys an example by its input, however it is written.
func sameInput(e Example) string { return canonical(e.Input) }

// sameExample keys an example by its input, however it is written, and
// what it expects: its output and the exchanges it holds the tool to, so
// that a repair is held to the same requests as the version it repairs.
func sameExample(e Example) string {
	return jsonLine(Example{Input: json.RawMessage(canonical(e.Input)), Contains: e.Contains, Matches: e.Matches, HTTP: e.HTTP})
}

// canonical re-encodes JSON with sorted keys and no spaces, so equal inputs
// compare equal however they were written.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

var position = regexp.MustCompile(`^\d+:\d+: `)

// forPeople shortens a problem written for the model to a clause for the
// failure message: no line:column, no list of allowed imports, 160 bytes.
func forPeople(problem string) string {
	p := position.ReplaceAllString(problem, "")
	p, _, _ = strings.Cut(p, "; allowed: ")
	return clip.String(p, 160)
}

// categories are the categories in use, for the write prompt.
func (g *Generator) categories() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range g.opts.Registry.List() {
		if e.Category != "" && !seen[e.Category] {
			seen[e.Category] = true
			out = append(out, e.Category)
		}
	}
	sort.Strings(out)
	return out
}
