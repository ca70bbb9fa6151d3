package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/atomicfile"
	"adaptbot/shipping"
)

// Shipping tools (package shipping) on the command line: `adaptbot tools
// export` (read-only: it writes only the module or bundle it is asked for)
// and `adaptbot tools import` (through the server, which alone writes
// tools: POST /api/tools/import).

const exportUsage = `adaptbot tools export NAME... [--out DIR [--module PATH] | --bundle FILE.tar.gz] [--format text|json]
      a standalone Go module that serves the tools over MCP, or a bundle for another AdaptBot;
      the tools they call come along`

const importUsage = `adaptbot tools import FILE.tar.gz [--rename OLD=NEW]... [--replace] [--format text|json]
      bring a bundle's tools in, through the gate (through the server)`

// renames is a repeatable --rename OLD=NEW.
type renames map[string]string

func (r renames) String() string { return fmt.Sprint(map[string]string(r)) }

func (r renames) Set(v string) error {
	from, to, ok := strings.Cut(v, "=")
	if !ok || from == "" || to == "" {
		return errors.New("want OLD=NEW, the bundle's name and the one it takes here")
	}
	if _, dup := r[from]; dup {
		return fmt.Errorf("%s is renamed twice", from)
	}
	r[from] = to
	return nil
}

// toolsExport is `adaptbot tools export`.
func toolsExport(ctx context.Context, e Env, args []string, usage string) error {
	fs := NewFlags("tools export")
	out := fs.String("out", "", "write a Go module into this new or empty folder")
	bundle := fs.String("bundle", "", "write a bundle (.tar.gz) to this file")
	module := fs.String("module", "", "the module's path (default: the folder's name)")
	format := formatFlag(fs, "text", "text", "json")
	if err := e.Parse(fs, args, usage); err != nil {
		return err
	}
	if err := format.check(usage); err != nil {
		return err
	}
	names := fs.Args()
	switch {
	case len(names) == 0:
		return UsageError(usage, "tools export: name the tools")
	case (*out == "") == (*bundle == ""):
		return UsageError(usage, "tools export: give --out DIR or --bundle FILE, one of the two")
	case *module != "" && *out == "":
		return UsageError(usage, "tools export: --module goes with --out")
	}
	for _, name := range names {
		if err := checkName(usage, "export", name); err != nil {
			return err
		}
	}
	reg, err := openReadOnly(ctx, e, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return err
	}
	items, err := shipping.Select(reg, names)
	if err != nil {
		return err
	}
	var tools, callees []string
	for _, it := range items {
		if it.Asked {
			tools = append(tools, it.Entry.Name)
		} else {
			callees = append(callees, it.Entry.Name)
		}
	}
	res := struct {
		Tools   []string `json:"tools"`
		Callees []string `json:"callees,omitempty"`
		Dir     string   `json:"dir,omitempty"`
		Bundle  string   `json:"bundle,omitempty"`
		Files   []string `json:"files,omitempty"`
	}{Tools: tools, Callees: callees}
	also := ""
	if len(callees) > 0 {
		also = fmt.Sprintf(" (with %s, which they call)", strings.Join(callees, ", "))
	}
	var text string
	if *out != "" {
		res.Dir = *out
		if res.Files, err = shipping.Export(items, shipping.ExportOptions{Dir: *out, Module: *module}); err != nil {
			return err
		}
		text = fmt.Sprintf("exported %s%s to %s: a Go module that serves them over MCP.\n  cd %s && go test ./... && go build\n", strings.Join(tools, ", "), also, *out, *out)
	} else {
		res.Bundle = *bundle
		var b bytes.Buffer
		if err := shipping.WriteBundle(&b, items, time.Now()); err != nil {
			return err
		}
		if err := atomicfile.Write(*bundle, b.Bytes(), 0o644); err != nil {
			return err
		}
		text = fmt.Sprintf("bundled %s%s in %s (%d bytes).\n  adaptbot tools import %s   (on another AdaptBot)\n", strings.Join(tools, ", "), also, *bundle, b.Len(), *bundle)
	}
	if format.value == "json" {
		return writeJSON(e.Stdout, res)
	}
	_, err = io.WriteString(e.Stdout, text)
	return err
}

// toolsImport is `adaptbot tools import FILE`: it sends the bundle to the
// server, which checks and writes it.
func toolsImport(ctx context.Context, e Env, args []string, usage string) error {
	cfg, stdout := e.Config, e.Stdout
	fs := NewFlags("tools import")
	rename := renames{}
	fs.Var(rename, "rename", "give a tool of the bundle a new name: OLD=NEW (repeatable)")
	replace := fs.Bool("replace", false, "let the bundle's tools replace tools of the same names, as their next versions")
	format := formatFlag(fs, "text", "text", "json")
	if err := e.Parse(fs, args, usage); err != nil {
		return err
	}
	if err := format.check(usage); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError(usage, "tools import: name one bundle")
	}
	data, err := os.ReadFile(fs.Arg(0))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("tools import: there is no bundle %s (adaptbot tools export NAME --bundle FILE.tar.gz makes one)", fs.Arg(0))
	}
	if err != nil {
		return fmt.Errorf("tools import: cannot read the bundle: %w", err)
	}
	// Base64 in a JSON body: three bytes in four characters, within the
	// server's body limit.
	if limit := cfg.Edge.WithDefaults().BodyLimit()*3/4 - 1024; len(data) > limit {
		return fmt.Errorf("%s is %d bytes; the server takes bundles of up to %d bytes: bundle fewer tools at a time", fs.Arg(0), len(data), limit)
	}
	req := adaptbot.ImportRequest{Bundle: data, Rename: rename, Replace: *replace}
	out, err := newClient(cfg).Import(ctx, req)
	if err != nil {
		return err
	}
	if format.value == "json" {
		return writeJSON(stdout, out)
	}
	var b strings.Builder
	for _, t := range out.Imported {
		b.WriteString(importedLine(t) + "\n")
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// importedLine says what became of one imported tool.
func importedLine(t adaptbot.Imported) string {
	line := t.Name
	if t.From != "" {
		line += " (" + t.From + " in the bundle)"
	}
	verb := "imported"
	if t.Replaced {
		verb = "replaced"
	}
	line += fmt.Sprintf(": %s as version %d", verb, t.Version)
	if t.Status == "pending" {
		return line + ", pending review: approve it to serve it (adaptbot tools approve " + t.Name + ")"
	}
	return line + ", serving"
}
