package router

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// UsageError is returned by RunCLI for a command line it cannot run (a bad
// flag or value); the caller prints nothing more than its message and exits
// with a usage status.
type UsageError struct{ Err error }

// Error returns the message, prefixed with the command's name.
func (e *UsageError) Error() string { return "route: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UsageError) Unwrap() error { return e.Err }

// routeUsage is the synopsis printed by -h and with usage errors.
const routeUsage = `usage: adaptbot route [--catalog FILE] [--top-k K] [--mode fused|flat|hierarchical] [--format text|json] [QUERY]
       adaptbot route --eval DIR [--format text|json] [--latency=false]

Routes QUERY to the tools best suited to it, best first. Without --catalog it
routes over the local registry. Without QUERY it reads JSON lines
{"id", "query"} from standard input and writes one JSON line per query:
{"id", "tools": [{"server", "name", "score"}]}.

With --eval DIR it scores every router and baseline on DIR/catalog.json and
DIR/queries.jsonl (the LiveMCPBench layout) and times Route at the catalog's
size and at 10,000 tools.
`

// RunCLI implements "adaptbot route"; args are the arguments after "route".
// local supplies the local registry's tools when no --catalog is given; it
// may be nil. Errors are returned, never printed, except that -h prints the
// usage to stderr and returns flag.ErrHelp.
func RunCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, local func() []Doc) error {
	fs := flag.NewFlagSet("route", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	catalog := fs.String("catalog", "", "catalog `FILE`: a JSON array of {name, description, tools: [{name, description, inputSchema}]}")
	topK := fs.Int("top-k", 5, "number of tools to return")
	format := fs.String("format", "text", "output format: text or json")
	modeName := fs.String("mode", "fused", "ranking: fused, flat or hierarchical")
	evalDir := fs.String("eval", "", "evaluate on the dataset in `DIR` instead of routing")
	latency := fs.Bool("latency", true, "with --eval, also time Route at the catalog's size and at 10,000 tools")

	// Flags may follow the query ("route 'get weather' --top-k 3"), so parse
	// again after each positional argument.
	var words []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stderr)
				fmt.Fprint(stderr, routeUsage, "\nflags:\n")
				fs.PrintDefaults()
				return err
			}
			return &UsageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	formatSet := false
	fs.Visit(func(f *flag.Flag) { formatSet = formatSet || f.Name == "format" })
	if *format != "text" && *format != "json" {
		return &UsageError{fmt.Errorf("--format must be text or json, not %q", *format)}
	}
	if *topK <= 0 {
		return &UsageError{fmt.Errorf("--top-k must be positive, not %d", *topK)}
	}
	mode, err := ParseMode(*modeName)
	if err != nil {
		return &UsageError{err}
	}

	if *evalDir != "" {
		if len(words) > 0 || *catalog != "" {
			return &UsageError{errors.New("--eval takes no QUERY and no --catalog")}
		}
		var sizes []int
		if *latency {
			sizes = []int{0, 10000} // 0: the catalog as it is
		}
		r, err := Evaluate(*evalDir, sizes, 3)
		if err != nil {
			return fmt.Errorf("route --eval: %w", err)
		}
		if *format == "json" {
			return writeJSON(stdout, r)
		}
		return r.WriteText(stdout)
	}

	var docs []Doc
	if *catalog != "" {
		if docs, err = LoadCatalog(*catalog); err != nil {
			return fmt.Errorf("route: catalog: %w", err)
		}
	} else if local != nil {
		docs = local()
	}
	ix := Build(docs)

	if len(words) > 0 {
		q := strings.Join(words, " ")
		hits := ix.RouteContext(ctx, q, *topK, mode)
		if *format == "json" {
			return writeJSON(stdout, struct {
				Query string `json:"query"`
				Tools []Hit  `json:"tools"`
			}{q, nonNil(hits)})
		}
		return writeHits(stdout, hits)
	}
	return routeLines(ctx, ix, stdin, stdout, *topK, mode, formatSet && *format == "text")
}

// ParseMode parses a mode name as printed by Mode.String.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Fused, Flat, Hierarchical} {
		if s == m.String() {
			return m, nil
		}
	}
	return Fused, fmt.Errorf("unknown mode %q (want fused, flat or hierarchical)", s)
}

// routeLines answers JSON lines {"id", "query"} from r, one JSON line each
// (or a text block each when text is set).
func routeLines(ctx context.Context, ix *Index, r io.Reader, w io.Writer, k int, m Mode, text bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for n := 1; sc.Scan(); n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var in struct {
			ID    json.RawMessage `json:"id"`
			Query *string         `json:"query"`
		}
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			return fmt.Errorf("route: standard input line %d: %w", n, err)
		}
		if in.Query == nil {
			return fmt.Errorf("route: standard input line %d: no \"query\"", n)
		}
		if len(in.ID) == 0 {
			in.ID = json.RawMessage("null")
		}
		hits := ix.RouteContext(ctx, *in.Query, k, m)
		if text {
			fmt.Fprintf(bw, "# %s %s\n", in.ID, *in.Query)
			if err := writeHits(bw, hits); err != nil {
				return err
			}
			continue
		}
		if err := enc.Encode(struct {
			ID    json.RawMessage `json:"id"`
			Tools []Hit           `json:"tools"`
		}{in.ID, nonNil(hits)}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("route: standard input: %w", err)
	}
	return bw.Flush()
}

func writeHits(w io.Writer, hits []Hit) error {
	var b strings.Builder
	if len(hits) == 0 {
		b.WriteString("no tools matched\n")
	}
	for i, h := range hits {
		fmt.Fprintf(&b, "%2d. %7.4f  %s / %s\n", i+1, h.Score, domainName(h.Server), h.Name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// nonNil makes an empty result encode as [] rather than null.
func nonNil(h []Hit) []Hit {
	if h == nil {
		return []Hit{}
	}
	return h
}
