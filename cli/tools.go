package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"adaptbot"
	"adaptbot/api"
	"adaptbot/contract"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/redact"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/service"
	"adaptbot/toolbox"
)

// toolUsage is one `tools` subcommand and its usage.
type toolUsage struct{ sub, usage string }

// toolsUsages is the usage of each `tools` subcommand. Those marked
// "through the server" send the change to the server at ADAPTBOT_ADDR.
var toolsUsages = []toolUsage{
	{"list", "adaptbot tools list [-c|--config FILE] [--server local|NAME] [--format table|text|json] [--timeout 30s] [--strict]\n      AdaptBot's tools and the MCP servers' tools (-c: the MCP servers file; --timeout: per server;\n      --strict: fail when a server fails, instead of listing the others)"},
	{"show", "adaptbot tools show NAME [--format text|json]\n      the tool's entry and source"},
	{"run", "adaptbot tools run NAME [JSON-ARGS] [--yes] [--format text|json]\n      run the tool directly, no model needed (through the server); a request of the tool's that\n      changes something asks [y/N] on a terminal first; --yes allows it without asking"},
	{"create", "adaptbot tools create \"REQUEST\" [--format text|json]\n      build a new tool; progress goes to stderr (through the server)"},
	{"modify", "adaptbot tools modify NAME \"REQUEST\" [--format text|json]\n      change a tool (through the server)"},
	{"delete", "adaptbot tools delete NAME [--yes] [--force] [--format text|json]\n      delete a tool, after a confirmation on a terminal; --yes skips it; --force deletes a tool\n      other tools use, leaving them broken (through the server)"},
	{"rollback", "adaptbot tools rollback NAME VERSION [--format text|json]\n      serve an old version again, as a new version (through the server)"},
	{"approve", "adaptbot tools approve NAME [--format text|json]\n      approve a tool waiting for review (through the server)"},
	{"test", "adaptbot tools test NAME [--format text|json]\n      re-run the tool's stored examples; exit status 1 if one fails"},
	{"history", "adaptbot tools history NAME [--format text|json]\n      the tool's kept versions"},
	{"export", exportUsage},
	{"import", importUsage},
	{"failures", "adaptbot tools failures NAME [--format text|json]\n      the tool's failure cases from real use, and its repairs (through the server)"},
	{"repair", "adaptbot tools repair NAME [CASE...] [--format text|json]\n      rewrite the tool from its open failure cases, or those named; progress goes to stderr (through the server)"},
}

// toolsHelp is the usage of `tools`, or of the subcommand args start with.
func toolsHelp(args []string) string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, u := range toolsUsages {
		if len(args) > 0 && args[0] == u.sub {
			return "Usage:\n  " + u.usage + "\n"
		}
		b.WriteString("  " + u.usage + "\n")
	}
	b.WriteString("\nChanges go through the server at ADAPTBOT_ADDR, with your key (ADAPTBOT_KEY, or else\nADAPTBOT_ADMIN_TOKEN); start it with `adaptbot serve`.\n")
	return b.String()
}

// ToolsSubcommands are the subcommands of `adaptbot tools`, in the order
// its usage lists them.
func ToolsSubcommands() []string {
	var subs []string
	for _, u := range toolsUsages {
		subs = append(subs, u.sub)
	}
	return subs
}

// toolsCommand is `adaptbot tools ...`.
func toolsCommand(ctx context.Context, e Env, args []string) error {
	if len(args) == 0 {
		return UsageError(toolsHelp(nil), "tools: which subcommand?")
	}
	sub, args := args[0], args[1:]
	if !slices.ContainsFunc(toolsUsages, func(u toolUsage) bool { return u.sub == sub }) {
		return UsageError(toolsHelp(nil), "tools: unknown subcommand %q", sub)
	}
	usage := toolsHelp([]string{sub})
	switch sub {
	case "list":
		return toolsList(ctx, e, args, usage)
	case "export":
		return toolsExport(ctx, e, args, usage)
	case "import":
		return toolsImport(ctx, e, args, usage)
	}
	cfg, stdout, stderr := e.Config, e.Stdout, e.Stderr
	fs := NewFlags("tools " + sub)
	format := formatFlag(fs, "text", "text", "json")
	yes, force := new(bool), new(bool)
	if sub == "delete" {
		fs.BoolVar(yes, "yes", false, "delete without asking")
		fs.BoolVar(force, "force", false, "delete a tool other tools use, leaving them broken")
	}
	if sub == "run" {
		fs.BoolVar(yes, "yes", false, "allow the tool's requests that change something without asking")
	}
	if err := e.Parse(fs, args, usage); err != nil {
		return err
	}
	if err := format.check(usage); err != nil {
		return err
	}
	args = fs.Args()
	want := func(n int, what string) error {
		if len(args) != n {
			return UsageError(usage, "tools %s: want %s", sub, what)
		}
		// The NAME first: one no tool can have is a bad value.
		if strings.HasPrefix(what, "NAME") && sub != "run" {
			return checkName(usage, sub, args[0])
		}
		return nil
	}
	// show writes v as JSON, or text as it is.
	show := func(v any, text string) error {
		if format.value == "json" {
			return writeJSON(stdout, v)
		}
		_, err := io.WriteString(stdout, text)
		return err
	}
	c := newClient(cfg)
	build := func(req adaptbot.BuildRequest) error {
		return runBuild(ctx, c, req, format.value == "text", stderr, show)
	}

	switch sub {
	case "show":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		return toolsShow(ctx, e, c, args[0], show)
	case "history":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		return toolsHistory(ctx, e, c, args[0], format.value)
	case "test":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		return toolsTest(ctx, e, c, args[0], show)
	case "run":
		if len(args) < 1 || len(args) > 2 {
			return want(2, "NAME [JSON-ARGS]")
		}
		if _, _, remote := toolbox.SplitName(args[0]); !remote {
			if err := checkName(usage, sub, args[0]); err != nil {
				return err
			}
		}
		var input json.RawMessage
		if len(args) == 2 {
			if err := checkArgs(usage, args[0], args[1]); err != nil {
				return err
			}
			input = json.RawMessage(args[1])
		}
		out, err := c.Run(runContext(ctx, e.Stdin, stderr, *yes), args[0], input)
		if err != nil {
			return err
		}
		return show(out, out.Output+"\n")
	case "create":
		if err := want(1, `"REQUEST"`); err != nil {
			return err
		}
		if strings.TrimSpace(args[0]) == "" {
			return UsageError(usage, `tools create: the REQUEST is empty: say what the tool should do, e.g. adaptbot tools create "a tool that converts roman numerals"`)
		}
		return build(adaptbot.BuildRequest{Text: args[0], Op: adaptbot.OpCreate})
	case "modify":
		if err := want(2, `NAME "REQUEST"`); err != nil {
			return err
		}
		if strings.TrimSpace(args[1]) == "" {
			return UsageError(usage, `tools modify: the REQUEST is empty: say what to change, e.g. adaptbot tools modify %s "also accept negative numbers"`, args[0])
		}
		return build(adaptbot.BuildRequest{Text: args[1], Op: adaptbot.OpModify, Tool: args[0]})
	case "delete":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		if err := confirm(e.Stdin, stderr, *yes, usage, "tools", "delete", args[0], "Its versions stay in history and rollback brings it back."); err != nil {
			return err
		}
		res, err := c.Delete(ctx, args[0], *force)
		if err != nil {
			return err
		}
		return show(res, res.Summary+"\n")
	case "rollback":
		if err := want(2, "NAME VERSION"); err != nil {
			return err
		}
		v, err := strconv.Atoi(args[1])
		if err != nil || v <= 0 {
			return UsageError(usage, "tools rollback: VERSION %q is not a version number", args[1])
		}
		out, err := c.Rollback(ctx, args[0], adaptbot.RollbackRequest{Version: v})
		if err != nil {
			return err
		}
		return show(out, fmt.Sprintf("%s: version %d restored as version %d.\n", out.Tool, out.Restored, out.Version))
	case "failures":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		return toolsFailures(ctx, c, args[0], format.value, stdout)
	case "repair":
		if len(args) < 1 {
			return want(1, "NAME [CASE...]")
		}
		if err := checkName(usage, sub, args[0]); err != nil {
			return err
		}
		return toolsRepair(ctx, c, args[0], args[1:], format.value, stdout, stderr)
	case "approve":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		out, err := c.Approve(ctx, args[0])
		if err != nil {
			return err
		}
		return show(out, args[0]+" approved: it serves now.\n")
	}
	return UsageError(toolsHelp(nil), "tools: unknown subcommand %q", sub)
}

// checkName is a usage error unless name can name a tool (a name a tool
// has from before a word was reserved still can: it is only read, deleted
// or rolled back).
func checkName(usage, sub, name string) error {
	if err := contract.ValidName(name); err != nil {
		return UsageError(usage, "tools %s: %q cannot name a tool: a tool's name is lower case letters, digits and _, starting with a letter (at most 63)", sub, name)
	}
	return nil
}

// checkArgs is a usage error unless args, a tool's JSON-ARGS, is one JSON
// object, saying what is wrong in words; the tool's schema is the
// server's to check.
func checkArgs(usage, tool, args string) error {
	hint := fmt.Sprintf(`give the arguments as one JSON object in single quotes, e.g. '{"expression": "2+3"}' (adaptbot tools show %s lists its parameters)`, tool)
	if strings.TrimSpace(args) == "" {
		return nil // no arguments: {}
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		where := ""
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			where = fmt.Sprintf(" (it goes wrong at character %d)", se.Offset)
		}
		return UsageError(usage, "tools run: JSON-ARGS %q is not valid JSON%s: %s", args, where, hint)
	}
	if _, ok := v.(map[string]any); !ok && v != nil { // null, as nothing, is {}
		return UsageError(usage, "tools run: JSON-ARGS %q is not a JSON object: %s", args, hint)
	}
	return nil
}

// toolsShow prints a tool's entry and source, from the server or, when
// none runs, from the files, which it only reads.
func toolsShow(ctx context.Context, e Env, c *api.Client, name string, show func(v any, text string) error) error {
	t, err := fromServer(ctx, e, c, false, func(ctx context.Context, tools adaptbot.ToolService) (*adaptbot.ToolInfo, error) {
		return tools.Tool(ctx, name)
	})
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, version %d (%s, %s)\n%s\n", t.Name, t.Version, t.Origin, t.Status, t.Description)
	if t.Category != "" {
		fmt.Fprintf(&b, "category: %s\n", t.Category)
	}
	if t.LastError != "" {
		fmt.Fprintf(&b, "last error: %s\n", t.LastError)
	}
	fmt.Fprintf(&b, "parameters: %s\nsource: %s\n\n%s", t.Parameters, t.Source, t.Code)
	return show(t, b.String())
}

// fromServer asks op of the server, or, when none runs, of a service of
// the command's own over the folder's files (openLocal): the second
// implementation of the same operations, which only reads. With run, the
// local service has a sandbox of its own, to run tools' examples.
func fromServer[T any](ctx context.Context, e Env, c *api.Client, run bool, op func(ctx context.Context, tools adaptbot.ToolService) (T, error)) (T, error) {
	v, err := op(ctx, c)
	if _, down := errors.AsType[*api.NoServerError](err); !down {
		return v, err
	}
	local, closeLocal, err := openLocal(ctx, e, run)
	if err != nil {
		return v, err
	}
	defer closeLocal()
	// The person at the terminal, as the loopback user of a server.
	return op(identity.With(ctx, identity.Local), local)
}

// openLocal is the service over the folder's files, opened read-only
// (registry.Options.ReadOnly), for when no server runs: it keeps no row,
// no trace and no failure case, and changes no tool. With run it has a
// sandbox of its own (e.Sandbox) and a generator to run tools' examples;
// close ends them.
func openLocal(ctx context.Context, e Env, run bool) (svc *service.Service, close func(), err error) {
	log := slog.New(redact.Handler(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if !run {
		reg, err := openReadOnly(ctx, e, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			return nil, nil, err
		}
		return service.New(service.Deps{Registry: reg, Tools: toolbox.New(reg, nil), Log: log}), func() {}, nil
	}
	// The examples of a tool that calls tools run with the real callees
	// (the registry's; external MCP tools are not reached from here).
	reg, box, runner, err := openToolbox(ctx, e, log)
	if err != nil {
		return nil, nil, err
	}
	gen, err := generator.New(generator.Options{Registry: reg, Runner: runner, Log: log, Tools: box})
	if err != nil {
		runner.Close()
		return nil, nil, err
	}
	return service.New(service.Deps{Registry: reg, Tools: box, Generator: gen, Log: log}), func() { runner.Close() }, nil
}

// openReadOnly opens the registry for a process that checks or exports
// tools but does not own the files: it writes nothing
// (registry.Options.ReadOnly). compiler, when not nil, compiles its tools.
func openReadOnly(ctx context.Context, e Env, log *slog.Logger, compiler registry.Compiler) (*registry.Registry, error) {
	return registry.Open(ctx, registry.Options{ToolsDir: e.Config.ToolsDir, Path: e.Config.Registry, Log: log, ReadOnly: true, Compiler: compiler})
}

// openToolbox opens the registry read-only with a sandbox of its own
// (e.Sandbox), and the toolbox over them, with the server's limit on how
// deep tools call tools. The caller closes the runner.
func openToolbox(ctx context.Context, e Env, log *slog.Logger) (*registry.Registry, *toolbox.Set, sandbox.Runner, error) {
	runner, err := e.Sandbox(log)
	if err != nil {
		return nil, nil, nil, err
	}
	reg, err := openReadOnly(ctx, e, log, runner)
	if err != nil {
		runner.Close()
		return nil, nil, nil, err
	}
	box := toolbox.New(reg, runner)
	box.LimitCallDepth(e.Config.MaxCallDepth)
	return reg, box, runner, nil
}

// toolsHistory prints a tool's kept versions, from the server or, when
// none runs, from the registry opened read-only.
func toolsHistory(ctx context.Context, e Env, c *api.Client, name, format string) error {
	stdout := e.Stdout
	list, err := fromServer(ctx, e, c, false, func(ctx context.Context, tools adaptbot.ToolService) (*adaptbot.VersionList, error) {
		return tools.Versions(ctx, name)
	})
	if err != nil {
		return err
	}
	vs := list.Versions
	if format == "json" {
		return writeJSON(stdout, vs)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tSAVED\tSHA256\tCURRENT")
	for _, v := range vs {
		cur := ""
		if v.Current {
			cur = "*"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.12s\t%s\n", v.Version, v.SavedAt.Format("2006-01-02 15:04:05"), v.SHA256, cur)
	}
	return tw.Flush()
}

// toolsTest re-runs a tool's stored examples: on the server, which writes
// its row and trace, or, when none runs, in a sandbox of its own over the
// registry opened read-only, which changes nothing.
func toolsTest(ctx context.Context, e Env, c *api.Client, name string, show func(v any, text string) error) error {
	rep, err := fromServer(ctx, e, c, true, func(ctx context.Context, tools adaptbot.ToolService) (*adaptbot.ExampleReport, error) {
		return tools.Test(ctx, name)
	})
	if err != nil {
		return err
	}
	var b strings.Builder
	for i, r := range rep.Results {
		if r.OK {
			fmt.Fprintf(&b, "ok    example %d %s\n", i+1, r.Input)
		} else {
			fmt.Fprintf(&b, "FAIL  example %d %s: %s\n", i+1, r.Input, r.Error)
		}
	}
	fmt.Fprintf(&b, "%s version %d: %d of %d examples pass\n", rep.Tool, rep.Version, len(rep.Results)-len(rep.Failures()), len(rep.Results))
	if err := show(rep, b.String()); err != nil {
		return err
	}
	if !rep.OK {
		return &ExitError{Code: 1}
	}
	return nil
}

// runBuild runs a build on the server with its progress on stderr, and
// shows its result; a build the gate refused exits 1 (in text, with each
// attempt's errors).
func runBuild(ctx context.Context, c adaptbot.BuildService, req adaptbot.BuildRequest, text bool, stderr io.Writer, show func(v any, text string) error) error {
	p := newProgressLine(stderr)
	res, err := c.Build(ctx, req, adaptbot.Stream{Progress: p.show})
	p.done()
	if err != nil {
		return err
	}
	if !res.OK && text {
		for _, a := range res.Log {
			fmt.Fprintf(stderr, "attempt %d:\n  %s\n", a.Number, strings.Join(a.Errors, "\n  "))
		}
		return fmt.Errorf("%s %s failed: %s", res.Op, res.Tool, res.Error)
	}
	if err := show(res, res.Summary+"\n"); err != nil {
		return err
	}
	if !res.OK {
		return &ExitError{Code: 1}
	}
	return nil
}
