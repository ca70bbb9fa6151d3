package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"adaptbot/generator"
	"adaptbot/registry"
	"adaptbot/router"
)

const toolsUsage = `Usage:
  adaptbot tools list [-c FILE] [--server local|NAME] [--format table|text|json] [--strict]
  adaptbot tools show NAME
  adaptbot tools run NAME [JSON-ARGS]
  adaptbot tools create "REQUEST"
  adaptbot tools modify NAME "REQUEST"
  adaptbot tools delete NAME
  adaptbot tools test NAME
  adaptbot tools history NAME
  adaptbot tools rollback NAME VERSION
`

// toolsCommand is `adaptbot tools ...`.
func toolsCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, toolsUsage)
		return errors.New("tools: which subcommand?")
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	sub, args := args[0], args[1:]
	need := func(n int, what string) error {
		if len(args) != n {
			fmt.Fprint(stderr, toolsUsage)
			return fmt.Errorf("tools %s: want %s", sub, what)
		}
		return nil
	}
	switch sub {
	case "list":
		return toolsList(ctx, getenv, args, stdout, stderr)
	case "show":
		if err := need(1, "NAME"); err != nil {
			return err
		}
		entries, err := registry.ReadEntries(cfg.Registry)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name == args[0] {
				if err := writeJSON(stdout, e); err != nil {
					return err
				}
				src, err := os.ReadFile(filepath.Join(cfg.ToolsDir, e.Name, e.Name+".go"))
				if err == nil {
					fmt.Fprintf(stdout, "\n%s", src)
				}
				return nil
			}
		}
		return fmt.Errorf("no tool named %q", args[0])
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := openWorld(ctx, cfg, nil, log)
	if err != nil {
		return err
	}
	defer w.Close()
	bench, err := openBench(cfg, log)
	if err != nil {
		return err
	}
	defer bench.Close()
	s := &Server{cfg: cfg, reg: w.reg, runner: w.runner, bench: bench, build: w.gen, log: log}
	build := func(req generator.Request) error {
		p := newProgressLine(stderr)
		res, err := s.runBuild(ctx, req, p.show)
		p.done()
		if err != nil {
			return err
		}
		if !res.OK {
			for _, a := range res.Log {
				fmt.Fprintf(stderr, "attempt %d:\n  %s\n", a.Number, strings.Join(a.Errors, "\n  "))
			}
			return fmt.Errorf("%s %s failed: %s", res.Op, res.Tool, res.Error)
		}
		fmt.Fprintln(stdout, res.Summary)
		return nil
	}

	switch sub {
	case "run":
		if len(args) < 1 || len(args) > 2 {
			return need(2, "NAME [JSON-ARGS]")
		}
		t, ok := w.reg.Tool(args[0])
		if !ok {
			return fmt.Errorf("no working tool named %q", args[0])
		}
		var input []byte
		if len(args) == 2 {
			input = []byte(args[1])
		}
		res, _, _, err := s.runTool(ctx, t, input)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, res.Output)
		return nil
	case "create":
		if err := need(1, `"REQUEST"`); err != nil {
			return err
		}
		return build(generator.Request{Text: args[0], Op: generator.Create})
	case "modify":
		if err := need(2, `NAME "REQUEST"`); err != nil {
			return err
		}
		return build(generator.Request{Text: args[1], Op: generator.Modify, Tool: args[0]})
	case "delete":
		if err := need(1, "NAME"); err != nil {
			return err
		}
		return build(generator.Request{Op: generator.Delete, Tool: args[0]})
	case "test":
		if err := need(1, "NAME"); err != nil {
			return err
		}
		rep, err := w.gen.TestTool(ctx, args[0])
		if err != nil {
			return err
		}
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
		if !rep.OK {
			return exitError(1)
		}
		return nil
	case "history":
		if err := need(1, "NAME"); err != nil {
			return err
		}
		vs, err := w.reg.Versions(args[0])
		if err != nil {
			return err
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
	case "rollback":
		if err := need(2, "NAME VERSION"); err != nil {
			return err
		}
		v, err := strconv.Atoi(args[1])
		if err != nil || v <= 0 {
			return fmt.Errorf("tools rollback: VERSION %q is not a version number", args[1])
		}
		e, err := w.reg.Rollback(ctx, args[0], v)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: version %d restored as version %d.\n", e.Name, v, e.Version)
		return nil
	}
	fmt.Fprint(stderr, toolsUsage)
	return fmt.Errorf("tools: unknown subcommand %q", sub)
}

// progressLine shows a build's progress on one terminal line.
type progressLine struct {
	w     io.Writer
	width int
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w} }

func (p *progressLine) show(ev generator.Event) {
	line := fmt.Sprintf("[%s] %s", ev.Stage, ev.Message)
	pad := ""
	if n := p.width - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

func (p *progressLine) done() {
	if p.width > 0 {
		fmt.Fprintln(p.w)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// routeCommand is `adaptbot route ...`; without --catalog it routes over the
// local registry.
func routeCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	local := func() []router.Doc {
		cfg, err := loadConfig(getenv)
		if err != nil {
			return nil
		}
		entries, err := registry.ReadEntries(cfg.Registry)
		if err != nil {
			return nil
		}
		var docs []router.Doc
		for _, e := range entries {
			if e.Status == registry.OK {
				docs = append(docs, router.Doc{Server: e.Category, Name: e.Name, Description: e.Description, Params: router.ParamsFromSchema(e.Parameters)})
			}
		}
		return docs
	}
	return router.RunCLI(ctx, args, stdin, stdout, stderr, local)
}
