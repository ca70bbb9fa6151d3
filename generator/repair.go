package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/contract"
	"adaptbot/egress"
	"adaptbot/sandbox"
)

// A repair is a modify driven by how a tool failed in real use: the model
// gets the source, the failing cases with their errors and the stored
// examples, and the new version goes through the same write → gate →
// register flow as any build, held to more:
//
//   - every stored example still passes, as stored (a repair may add
//     examples, never change what an old one expects);
//   - every failing case now gives a result or a clear error (Execute
//     returns an error, or the arguments are refused): a panic, a timeout,
//     running out of memory or an oversized output is never acceptable.
//
// The cases that now give a result become stored examples, expecting what
// the new version answered (or what the model's own example for that input
// expects): regression tests for every later change. A private case (one
// whose input the caller may not publish, private.go) does not: what it
// gave is returned to the caller (CaseResult.Expect) to keep with the case,
// and later repairs run it again (Case.Recheck). The version's note in
// history lists what the repair fixed.

// StageCase is the stage of a repair's check that runs one failing case.
const StageCase = "case"

// MaxRepairCases bounds the failing cases one repair takes, so that a tool
// failing every way at once cannot flood the model's prompt.
const MaxRepairCases = 10

// MaxRecheckCases bounds the cases fixed before (Case.Recheck) that one
// repair runs again, on top of MaxRepairCases.
const MaxRecheckCases = 10

// maxCaseInput caps each case's input as the prompt quotes it.
const maxCaseInput = 1 << 10

// Case is one way a tool failed that a repair must fix.
type Case struct {
	// ID names the case (failures.Case.ID).
	ID string `json:"id"`
	// Input is the call's arguments, a JSON object.
	Input json.RawMessage `json:"input"`
	// Kind and Error say how it failed: error, panic, timeout, memory,
	// bad_output, or feedback (it ran, and a person said the answer was
	// wrong, in Comment).
	Kind    string `json:"kind"`
	Error   string `json:"error,omitempty"`
	Comment string `json:"comment,omitempty"`
	Count   int    `json:"count,omitempty"`
	// Private: the input is someone else's words, which this repair may
	// not publish: it never becomes a stored example, and neither does an
	// example of the model's with the same input.
	Private bool `json:"private,omitempty"`
	// Recheck: an earlier repair fixed this case without making it an
	// example; the new version must still pass it: give a result that
	// contains Expect when it is set, else a result or a clear error.
	Recheck bool   `json:"recheck,omitempty"`
	Expect  string `json:"expect,omitempty"`
}

// RepairRequest asks for a repair of Tool from Cases.
type RepairRequest struct {
	Tool  string
	Cases []Case
	// Hold keeps the repaired version waiting for approval whatever the
	// registry's review setting (an automatic repair proposes, a person
	// approves).
	Hold bool
	// Permit is asked before anything is claimed or written, as for a
	// build (Request.Permit).
	Permit func(op Op, tool string) error
}

// CaseResult is how the repaired version did on one failing case.
type CaseResult = adaptbot.CaseResult

// Outcomes of a failing case under the repaired version.
const (
	OutcomeResult = adaptbot.CaseOutcomeResult
	OutcomeError  = adaptbot.CaseOutcomeError
)

// caseFix is a repair under way: what it was given, and how the last
// candidate that passed the gate did on each case.
type caseFix struct {
	cases   []Case
	hold    bool
	results []CaseResult
}

// ErrNoCases is returned by Repair for a request without failing cases.
var ErrNoCases = errors.New("a repair needs at least one failing case")

// Repair rewrites a serving tool so that it passes its stored examples and
// turns every case into a result or a clear error; see the rules above.
// Like Build, a repair the gate refuses returns OK=false with a nil error,
// and the previous version keeps serving. Result.Cases says how the
// repaired version does on each case.
func (g *Generator) Repair(ctx context.Context, req RepairRequest, progress func(Event)) (*Result, error) {
	if err := contract.ValidName(req.Tool); err != nil {
		return nil, err
	}
	var fresh, rechecks int
	for _, c := range req.Cases {
		if c.Recheck {
			rechecks++
		} else {
			fresh++
		}
	}
	if fresh == 0 {
		return nil, ErrNoCases
	}
	if fresh > MaxRepairCases || rechecks > MaxRecheckCases {
		return nil, fmt.Errorf("a repair takes at most %d failing cases and %d fixed before, not %d and %d", MaxRepairCases, MaxRecheckCases, fresh, rechecks)
	}
	for _, c := range req.Cases {
		if len(c.Input) == 0 || c.Input[0] != '{' || !json.Valid(c.Input) {
			return nil, fmt.Errorf("failing case %s: its input is not a JSON object", c.ID)
		}
	}
	fix := &caseFix{cases: req.Cases, hold: req.Hold}
	res, err := g.Build(ctx, Request{
		Op: Modify, Tool: req.Tool, Permit: req.Permit, fix: fix,
		Text:    fmt.Sprintf("repair %s from %d failure case%s", req.Tool, fresh, clip.Plural(fresh)),
		Summary: "Fix the failures seen in real use, keeping everything the stored examples check.",
	}, progress)
	if res != nil {
		res.Cases = fix.results
		if res.OK && !res.Pending {
			res.Summary = fmt.Sprintf("Repaired %s: version %d passes its stored examples and turns all %d failure cases into %s. The previous version is kept and can be restored.",
				res.Tool, res.Version, len(fix.results), outcomes(fix.results))
		}
	}
	return res, err
}

// HasModel reports whether the generator has a model to write code with:
// without one, Repair and Build fail with llm.ErrNoModel.
func (g *Generator) HasModel() bool { return g.opts.Model != nil }

// checkCases runs every failing case against a candidate that passed the
// gate. Each must give a result or a clear error; the problems say which
// do not, in words for the model. The error is for a sandbox that cannot
// run them or a cancelled build.
func (g *Generator) checkCases(ctx context.Context, name string, t *checked, cases []Case, emit func(Event)) ([]CaseResult, []string, error) {
	results := make([]CaseResult, 0, len(cases))
	var problems []string
	for i, c := range cases {
		emit(Event{Stage: StageCase, Message: fmt.Sprintf("running failing case %d of %d", i+1, len(cases)), Example: i + 1, Examples: len(cases)})
		r := CaseResult{ID: c.ID, Input: c.Input}
		where := fmt.Sprintf("failing case %d of %d (input %s, which %s)", i+1, len(cases), clipText(string(compact(c.Input))), failedHow(c))
		if err := contract.Validate(t.spec.Parameters, c.Input); err != nil {
			// Refused before Execute runs, with the schema's reason: a
			// clear error.
			r.OK, r.Outcome, r.Error = true, OutcomeError, "the arguments are refused: "+err.Error()
			results = append(results, r)
			continue
		}
		// A case has no exchanges to answer its requests: it runs as an
		// example without them does, GET and HEAD only, so that it never
		// acts.
		cctx := egress.Bind(egress.WithReadOnly(ctx), nil, egress.Tool{Name: name, SHA256: adaptbot.Digest(t.source), Hosts: t.spec.Hosts})
		res, err := g.opts.Runner.Run(cctx, sandbox.Call{Tool: name, Source: t.source, Input: c.Input, Timeout: g.opts.ExampleTimeout})
		var se *sandbox.Error
		switch {
		case err == nil:
			r.OK, r.Outcome, r.Output = true, OutcomeResult, clipText(res.Output)
			if c.Recheck && c.Expect != "" && !strings.Contains(res.Output, c.Expect) {
				r.OK = false
				problems = append(problems, fmt.Sprintf("%s: gave %q, which lacks %q: the version an earlier repair made gave that, and it must still", where, clipText(res.Output), c.Expect))
			}
		case ctx.Err() != nil || adaptbot.FailureOf(err) == adaptbot.FailUnavailable:
			return results, problems, fmt.Errorf("%s: %w", where, err)
		case errors.As(err, &se) && (se.Kind == adaptbot.FailError || se.Kind == adaptbot.FailInvalidArgs) && strings.TrimSpace(se.Msg) != "":
			r.OK, r.Outcome, r.Error = true, OutcomeError, se.Msg
			if c.Recheck && c.Expect != "" {
				r.OK = false
				problems = append(problems, fmt.Sprintf("%s: now refuses it (%s), but the version an earlier repair made gave a result containing %q, and it must still", where, clipText(se.Msg), c.Expect))
			}
		case errors.As(err, &se) && (se.Kind == adaptbot.FailError || se.Kind == adaptbot.FailInvalidArgs):
			r.Outcome, r.Error = string(se.Kind), "Execute returned an empty error"
			problems = append(problems, where+": Execute returned an error with no message; say what is wrong with the input")
		default:
			r.Outcome, r.Error = string(adaptbot.FailureOf(err)), runProblem(err)
			problems = append(problems, where+": still fails: "+runProblem(err)+"; return a result or an error that says what is wrong with the input")
		}
		results = append(results, r)
	}
	return results, problems, nil
}

// failedHow says how a case failed before, for a problem's words.
func failedHow(c Case) string {
	if c.Recheck {
		return "an earlier repair fixed"
	}
	if c.Kind == "feedback" {
		return "a person said gave a wrong answer"
	}
	return "failed with " + c.Kind
}

// fixedExamples are the stored examples the cases that now give a result
// become: expecting what the new version answered, unless an example
// already has that input (the model's own, or a stored one). A private
// case becomes none: its result says what later repairs must still give
// (CaseResult.Expect).
func fixedExamples(have []Example, cases []Case, results []CaseResult) ([]Example, []CaseResult) {
	seen := map[string]bool{}
	for _, e := range have {
		seen[canonical(e.Input)] = true
	}
	private := map[string]bool{}
	for _, c := range cases {
		private[c.ID] = c.Private
	}
	var out []Example
	for i, r := range results {
		if !r.OK || r.Outcome != OutcomeResult {
			continue
		}
		if private[r.ID] {
			results[i].Expect = expecting(r.Input, r.Output).Contains
			continue
		}
		results[i].Example = true
		key := canonical(r.Input)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, expecting(r.Input, r.Output))
	}
	return out, results
}

// expecting is an example that expects output: all of it when short, else
// its start; an empty output only needs the call to succeed.
func expecting(input json.RawMessage, output string) Example {
	out := strings.TrimSpace(strings.TrimSuffix(output, clip.Marker))
	if out == "" {
		return Example{Input: input, Matches: `^\s*$`}
	}
	return Example{Input: input, Contains: clip.Prefix(out, 200)}
}

// repairNote is what the version's history says of the repair.
func repairNote(results []CaseResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Repair of %d failure case%s: %s.\n", len(results), clip.Plural(len(results)), outcomes(results))
	for _, r := range results {
		fmt.Fprintf(&b, "- case %s, input %s: ", r.ID, clip.String(string(compact(r.Input)), 200))
		switch {
		case r.Outcome == OutcomeResult && r.Example:
			b.WriteString("now gives a result (a stored example from now on)\n")
		case r.Outcome == OutcomeResult && r.Expect != "":
			b.WriteString("now gives a result (someone else's input: kept with the case, run again by later repairs, never an example)\n")
		case r.Outcome == OutcomeResult:
			b.WriteString("now gives a result\n")
		default:
			b.WriteString("now a clear error: " + clip.String(r.Error, 200) + "\n")
		}
	}
	return b.String()
}

// outcomes counts results and clear errors: "2 results and 1 clear error".
func outcomes(results []CaseResult) string {
	var ok, errs int
	for _, r := range results {
		switch r.Outcome {
		case OutcomeResult:
			ok++
		case OutcomeError:
			errs++
		}
	}
	var parts []string
	if ok > 0 {
		parts = append(parts, fmt.Sprintf("%d result%s", ok, clip.Plural(ok)))
	}
	if errs > 0 {
		parts = append(parts, fmt.Sprintf("%d clear error%s", errs, clip.Plural(errs)))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " and ")
}
