package generator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/contract"
	"adaptbot/egress"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/telemetry"
)

// minExamples is how many examples a tool must come with.
const minExamples = 2

// maxShown caps the output and input quoted back in an error.
const maxShown = 400

// checked is a candidate that passed every step of the gate.
type checked struct {
	source   []byte // gofmt'ed, package clause = tool name
	spec     *contract.Spec
	examples []Example
	// carried are the hosts the examples' requests took each secret to.
	carried map[string][]string
}

// verdict is what the gate found: the tool if it passed, otherwise the
// problems, exactly as the model will be shown them.
type verdict struct {
	tool     *checked
	source   string // the source as checked, for the build log
	fixed    []string
	problems []string
}

// gate is the one way into tools/: extract, parse and gofmt, contract,
// compile, examples. It stops at the first step that fails (a file that does
// not parse cannot be compiled) but reports every problem of that step, so a
// repair can fix them all at once. The error is for failures that are not the
// candidate's: a cancelled build or an unavailable sandbox.
func (g *Generator) gate(ctx context.Context, name string, c candidate, emit func(Event)) (v verdict, err error) {
	if err := adaptbot.ReservedName(name); err != nil {
		return verdict{}, err // no code can fix the name: the build stops
	}
	ctx, spans := telemetry.StartGate(ctx, name)
	defer func() { spans.End(len(v.problems), err) }()
	emit(Event{Stage: StageCheck, Message: "checking the code"})
	spans.Stage(ctx, "check")
	src := extractSource(c.Source)
	if src == "" {
		return verdict{problems: slices.Concat(c.Problems, []string{"no Go source code was found in the reply: put the complete file in the source field of write_tool"})}, nil
	}
	formatted, fixed, problems := normalize(name, src, c.Description)
	v = verdict{source: src, fixed: fixed}
	if len(problems) > 0 {
		v.problems = slices.Concat(c.Problems, problems)
		return v, nil
	}
	v.source = string(formatted)
	v.tool, v.problems, err = g.checkSource(ctx, spans, name, formatted, c.Problems, c.Examples, emit)
	return v, err
}

// checkSource is the gate after extraction and normalization: src as it is,
// checked against the contract and what the interpreter lacks, its
// examples' shape, then compiled, then every example run. earlier are
// problems already found (in the reply around the code); with any, it
// stops before compiling. It returns the checked tool, or the problems.
func (g *Generator) checkSource(ctx context.Context, spans *telemetry.Gate, name string, src []byte, earlier []string, examples []Example, emit func(Event)) (*checked, []string, error) {
	var problems []string
	spec, err := contract.Parse(name, src)
	var ce *contract.Error
	switch {
	case errors.As(err, &ce):
		problems = append(problems, ce.Problems...)
	case err != nil:
		problems = append(problems, err.Error())
	}
	problems = append(problems, interpreterLint(name, src)...)
	problems = append(problems, g.callProblems(name, src)...)
	problems = append(problems, checkExamples(examples, spec, err == nil)...)
	if len(earlier)+len(problems) > 0 {
		return nil, slices.Concat(earlier, problems), nil
	}

	emit(Event{Stage: StageCompile, Message: "compiling", Inputs: inputsOf(spec), Hosts: spec.Hosts, Secrets: spec.Secrets})
	if err := g.opts.Runner.Compile(spans.Stage(ctx, "compile"), name, src); err != nil {
		if ierr := infrastructure(ctx, err); ierr != nil {
			return nil, nil, ierr
		}
		return nil, []string{compileProblem(err)}, nil
	}

	results, carried, err := g.runExamples(spans.Stage(ctx, "examples"), name, src, spec.Output, examples, emit)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range results {
		if !r.OK {
			problems = append(problems, r.Error)
		}
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	return &checked{source: src, spec: spec, examples: examples, carried: carried}, nil, nil
}

// Check puts a tool written elsewhere (a bundle's, say) through the gate a
// built tool passes, exactly as it is: no extraction, no fixes. The
// contract, what the interpreter lacks, at least two examples, a compile in
// the sandbox, and every example run, its result held to the output schema.
// It needs no model and saves nothing. problems lists what fails, one a
// line, none when the tool passes; the error is for a failure that is not
// the tool's (a cancelled context, a sandbox away), or a name no tool may
// have (contract.ValidName, adaptbot.ReservedName).
func (g *Generator) Check(ctx context.Context, name string, src []byte, examples []Example) (problems []string, err error) {
	if err := contract.ValidName(name); err != nil {
		return nil, err
	}
	if err := adaptbot.ReservedName(name); err != nil {
		return nil, err
	}
	ctx, spans := telemetry.StartGate(ctx, name)
	defer func() { spans.End(len(problems), err) }()
	spans.Stage(ctx, "check")
	_, problems, err = g.checkSource(ctx, spans, name, src, nil, examples, func(Event) {})
	return problems, err
}

// infrastructure returns a non-nil error if err says the build cannot go on
// (cancelled, sandbox unavailable) rather than that the candidate is wrong.
func infrastructure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Anything but the sandbox's verdict on the code stops the build.
	if se, verdict := errors.AsType[*sandbox.Error](err); !verdict || se.Kind == adaptbot.FailUnavailable {
		return err
	}
	return nil
}

// compileProblem words a failed compile for the model, with a hint when the
// interpreter's own message would not help it.
func compileProblem(err error) string {
	msg := err.Error()
	var se *sandbox.Error
	if errors.As(err, &se) {
		msg = se.Msg
		if se.Kind == adaptbot.FailPanic {
			return "the interpreter failed while compiling (" + msg + "): this usually means a Go feature the interpreter lacks " +
				"(range over a function, slices or maps functions it does not offer) or generics over named types; rewrite that part with plain loops and helpers"
		}
		if se.Kind == adaptbot.FailTimeout {
			return "loading the tool ran past its time limit: package-level variables must not do heavy work or loop"
		}
	}
	if m := undefinedName.FindStringSubmatch(msg); m != nil {
		for _, p := range contract.AllowedImports() {
			if p == m[1] || strings.HasSuffix(p, "/"+m[1]) {
				msg += fmt.Sprintf(" (missing import %q?)", p)
				break
			}
		}
	}
	return "compile error: " + msg
}

var undefinedName = regexp.MustCompile(`undefined: ([a-z0-9]+)\b`)

// normalize parses src, makes the mechanical fixes that need no model (the
// package name, a missing package clause or package comment) and gofmts it.
// The fixes are listed; problems are parse errors, one a line.
func normalize(name, src, description string) (formatted []byte, fixed, problems []string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", src, parser.ParseComments)
	if err != nil && !hasPackageClause(src) {
		src = "package " + name + "\n\n" + src
		fixed = append(fixed, "added the missing package clause `package "+name+"`")
		f, err = parser.ParseFile(fset, name+".go", src, parser.ParseComments)
	}
	if err != nil {
		return nil, fixed, parseProblems(err)
	}

	// Edits are made on the text, from the end backwards, so the offsets of
	// the ones before stay right.
	type edit struct {
		from, to int
		text     string
	}
	var edits []edit
	old := f.Name.Name
	if old != name {
		edits = append(edits, edit{fset.Position(f.Name.Pos()).Offset, fset.Position(f.Name.End()).Offset, name})
		fixed = append(fixed, fmt.Sprintf("renamed package %s to %s: the package name must be the tool name", old, name))
	}
	switch {
	case f.Doc != nil:
		first := f.Doc.List[0]
		if lead := "// Package " + old; old != name && strings.HasPrefix(first.Text, lead) {
			off := fset.Position(first.Pos()).Offset
			edits = append(edits, edit{off, off + len(lead), "// Package " + name})
		}
	case description != "":
		off := fset.Position(f.Package).Offset
		edits = append(edits, edit{off, off, "// Package " + name + " " + sentence(description) + "\n"})
		fixed = append(fixed, "added the package comment from the description")
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].from > edits[j].from })
	for _, e := range edits {
		src = src[:e.from] + e.text + src[e.to:]
	}

	out, err := format.Source([]byte(src))
	if err != nil {
		return nil, fixed, parseProblems(err)
	}
	return out, fixed, nil
}

// sentence turns a description into the rest of a package comment:
// "Converts Roman numerals" becomes "converts Roman numerals."
func sentence(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	r, n := utf8.DecodeRuneInString(d)
	if next, _ := utf8.DecodeRuneInString(d[n:]); unicode.IsUpper(r) && !unicode.IsUpper(next) {
		d = string(unicode.ToLower(r)) + d[n:]
	}
	if !strings.HasSuffix(d, ".") {
		d += "."
	}
	return d
}

// parseProblems lists a parser's errors, at most ten.
func parseProblems(err error) []string {
	var list scanner.ErrorList
	if !errors.As(err, &list) {
		return []string{"the code does not parse: " + err.Error()}
	}
	var out []string
	for i, e := range list {
		if i == 10 {
			out = append(out, fmt.Sprintf("… and %d more parse errors", len(list)-10))
			break
		}
		out = append(out, fmt.Sprintf("does not parse: %d:%d: %s", e.Pos.Line, e.Pos.Column, e.Msg))
	}
	return out
}

// interpreterLint finds what the sandbox cannot run with the meaning Go
// gives it, so the model gets a clear message instead of an interpreter's
// error or, worse, a different answer: a loop variable that a closure
// captures and the body changes (sandbox.CheckSemantics), and a range over
// a function literal. min, max, clear and range over an integer work.
func interpreterLint(name string, src []byte) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", src, 0)
	if err != nil {
		return nil
	}
	out := sandbox.CheckSemantics(src)
	ast.Inspect(f, func(n ast.Node) bool {
		if n, ok := n.(*ast.RangeStmt); ok {
			if _, ok := n.X.(*ast.FuncLit); ok {
				p := fset.Position(n.Pos())
				out = append(out, fmt.Sprintf("%d:%d: range over a function is not supported by the interpreter: use a plain loop", p.Line, p.Column))
			}
		}
		return true
	})
	return out
}

// checkExamples checks the examples before anything runs: enough of them,
// each with an expectation, a regexp that compiles and, when the contract
// passed, an input the tool's schema accepts.
func checkExamples(examples []Example, spec *contract.Spec, validate bool) []string {
	var out []string
	if len(examples) < minExamples {
		out = append(out, fmt.Sprintf("write_tool needs at least %d examples, each {\"input\": {...}, \"contains\": \"...\"} or with \"matches\" (a regexp); got %d", minExamples, len(examples)))
	}
	for i, e := range examples {
		where := fmt.Sprintf("example %d of %d", i+1, len(examples))
		if len(e.Input) == 0 || e.Input[0] != '{' {
			out = append(out, fmt.Sprintf("%s: input must be a JSON object of Input's fields, got %s", where, clipText(string(compact(e.Input)))))
			continue
		}
		if e.Contains == "" && e.Matches == "" {
			out = append(out, where+": give contains (text the output must contain) or matches (a regexp it must match)")
		}
		if e.Matches != "" {
			if _, err := regexp.Compile(e.Matches); err != nil {
				out = append(out, fmt.Sprintf("%s: matches is not a valid RE2 regexp: %v", where, err))
			}
		}
		if validate && spec != nil {
			if err := contract.Validate(spec.Parameters, e.Input); err != nil {
				out = append(out, fmt.Sprintf("%s: input %s does not fit Input: %v", where, clipText(string(compact(e.Input))), err))
			}
		}
		for j, x := range e.HTTP {
			at := fmt.Sprintf("%s, http exchange %d", where, j+1)
			if x.Request.URL == "" {
				out = append(out, at+`: give the request's "url" (as the tool writes it, {{secret:NAME}} included)`)
			}
			if s := x.Response.Status; s != 0 && (s < 100 || s > 599) {
				out = append(out, fmt.Sprintf("%s: status %d is not an HTTP status", at, s))
			}
		}
	}
	return out
}

// runExamples runs each example in the sandbox under the example timeout
// and checks its expectation and, for a tool with an output schema (it
// returns an Output struct), that the result fits it. The tools it calls
// are the real ones, with overrides in place of theirs. The error is for an
// unavailable sandbox or a cancelled build; a failing example is a result.
func (g *Generator) runExamples(ctx context.Context, name string, src []byte, output json.RawMessage, examples []Example, emit func(Event), overrides ...registry.Tool) ([]ExampleResult, map[string][]string, error) {
	ctx = g.calling(ctx, name, overrides...)
	var schema *contract.Schema
	if len(output) > 0 {
		var err error
		if schema, err = contract.CompileSchema(output); err != nil {
			return nil, nil, fmt.Errorf("tool %s: output schema: %w", name, err)
		}
	}
	replay, tool := Replays(name, src, examples)
	out := make([]ExampleResult, 0, len(examples))
	carried := map[string][]string{} // the hosts the requests took each secret to
	for i, e := range examples {
		emit(Event{Stage: StageExample, Message: fmt.Sprintf("running example %d of %d", i+1, len(examples)), Example: i + 1, Examples: len(examples)})
		r := ExampleResult{Example: e}
		where := fmt.Sprintf("example %d of %d (input %s)", i+1, len(examples), clipText(string(compact(e.Input))))
		// No example acts: its exchanges answer the requests of the tool
		// and of the tools it calls, or, for a tool that only reads, GET
		// and HEAD go out and nothing else does.
		ectx, rp := egress.WithReadOnly(ctx), (*egress.Replay)(nil)
		if replay {
			rp = egress.NewReplay(e.HTTP)
			ectx = egress.WithReplay(ctx, rp)
		}
		ectx = egress.Bind(ectx, nil, tool)
		res, err := g.opts.Runner.Run(ectx, sandbox.Call{Tool: name, Source: src, Input: e.Input, Timeout: g.opts.ExampleTimeout})
		var unlisted []string
		if rp != nil {
			unlisted = rp.Problems()
			for secret, hosts := range rp.Carried() {
				for _, h := range hosts {
					if !slices.Contains(carried[secret], h) {
						carried[secret] = append(carried[secret], h)
					}
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil || adaptbot.FailureOf(err) == adaptbot.FailUnavailable {
				return out, carried, fmt.Errorf("%s: %w", where, err)
			}
			r.Error = where + ": " + strings.Join(append([]string{runProblem(err)}, unlisted...), "; ")
			out = append(out, r)
			continue
		}
		r.Output = clipText(res.Output)
		r.Error = strings.Join(unlisted, "; ")
		if r.Error == "" {
			r.Error = expectation(e, res.Output)
		}
		if r.Error == "" && schema != nil {
			if err := schema.ValidateResult(json.RawMessage(res.Output)); err != nil {
				r.Error = "Output, as returned, does not fit the schema derived from its declaration: " + err.Error()
			}
		}
		if r.Error != "" {
			r.Error = where + ": " + r.Error
		}
		r.OK = r.Error == ""
		out = append(out, r)
	}
	return out, carried, nil
}

// Replays reports whether the examples of the tool name, whose source is
// src, answer its requests from their exchanges: when it declares hosts,
// sends with Do or PostJSON (it acts), or any example has exchanges. A
// tool that only reads (Get, GetJSON) and lists none still reaches the
// network, as it always has. tool is the tool as its requests are
// checked. The native tier's differential check asks the same (its
// examples alone, never a real call again, for a tool that acts).
func Replays(name string, src []byte, examples []Example) (bool, egress.Tool) {
	t := egress.Tool{Name: name, SHA256: adaptbot.Digest(src)}
	spec, _ := contract.Parse(name, src)
	acts := false
	if spec != nil {
		t.Hosts = spec.Hosts
		acts = len(spec.Hosts) > 0 || slices.Contains(spec.Toolkit, "Do") || slices.Contains(spec.Toolkit, "PostJSON")
	}
	for _, e := range examples {
		acts = acts || len(e.HTTP) > 0
	}
	return acts, t
}

// runProblem words a failed run: what kind of failure and the message.
func runProblem(err error) string {
	var se *sandbox.Error
	if !errors.As(err, &se) {
		return err.Error()
	}
	switch se.Kind {
	case adaptbot.FailError:
		return "Execute returned an error: " + se.Msg
	case adaptbot.FailPanic:
		return "Execute panicked (return an error instead of panicking): " + se.Msg
	case adaptbot.FailTimeout:
		return "timed out: " + se.Msg
	case adaptbot.FailInvalidArgs:
		return "the input was rejected: " + se.Msg
	}
	return string(se.Kind) + ": " + se.Msg
}

// expectation says how output fails e, or "" if it passes.
func expectation(e Example, output string) string {
	if e.Contains != "" && !strings.Contains(output, e.Contains) {
		return fmt.Sprintf("the output %s does not contain %q", quoteClip(output), e.Contains)
	}
	if e.Matches != "" {
		re, err := regexp.Compile(e.Matches)
		if err != nil {
			return fmt.Sprintf("matches %q is not a valid regexp: %v", e.Matches, err)
		}
		if !re.MatchString(output) {
			return fmt.Sprintf("the output %s does not match the regexp %q", quoteClip(output), e.Matches)
		}
	}
	return ""
}

func clipText(s string) string { return clip.String(s, maxShown) }

func quoteClip(s string) string { return fmt.Sprintf("%q", clipText(s)) }

// encodeExamples is the examples.json the registry stores with the tool.
func encodeExamples(examples []Example) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(examples) //nolint:errcheck // raw messages were checked when decoded
	return b.Bytes()
}

// inputsOf lists a tool's parameters as "name (type)", in the schema's order.
func inputsOf(spec *contract.Spec) []string {
	if spec == nil {
		return nil
	}
	var sc struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(spec.Parameters, &sc) != nil || len(sc.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(sc.Properties))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		var p struct {
			Type any `json:"type"`
		}
		if dec.Decode(&p) != nil {
			return out
		}
		if t, ok := p.Type.(string); ok {
			out = append(out, fmt.Sprintf("%v (%s)", tok, t))
		} else {
			out = append(out, fmt.Sprint(tok))
		}
	}
	return out
}
