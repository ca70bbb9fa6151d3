package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"adaptbot/clip"
	"adaptbot/registry"
	"adaptbot/router"
)

// routeUsage is the synopsis printed by --help.
const routeUsage = `Usage: adaptbot route [--catalog FILE] [--top-k K] [--mode fused|flat|hierarchical] [--format text|json] [QUERY]

Routes QUERY to the tools best suited to it, best first. Without --catalog it
routes over the local registry. Without QUERY it reads JSON lines
{"id", "query"} from standard input and writes one JSON line per query:
{"id", "tools": [{"server", "name", "score"}]}.

The router's evaluation on a dataset is a program of its own, not part of
the binary. From the repository:
go run ./router/routereval/cmd/routeeval [--latency=false] [--flows] DIR.
`

// routeCommand is `adaptbot route ...`; without --catalog it routes over the
// local registry file, which it only reads.
func routeCommand(ctx context.Context, e Env, args []string) error {
	cfg, stdin, stdout := e.Config, e.Stdin, e.Stdout
	fs := NewFlags("route")
	catalog := fs.String("catalog", "", "catalog FILE: a JSON array of {name, description, tools: [{name, description, inputSchema}]}")
	topK := fs.Int("top-k", 5, "number of tools to return")
	format := formatFlag(fs, "text", "text", "json")
	modeName := fs.String("mode", "fused", "ranking: fused, flat or hierarchical")
	if err := e.Parse(fs, args, routeUsage); err != nil {
		return err
	}
	words := fs.Args()
	formatSet := false
	fs.Visit(func(f *flag.Flag) { formatSet = formatSet || f.Name == "format" })
	if err := format.check(routeUsage); err != nil {
		return err
	}
	if *topK <= 0 {
		return UsageError(routeUsage, "route: --top-k must be positive, not %d", *topK)
	}
	mode, err := router.ParseMode(*modeName)
	if err != nil {
		return UsageError(routeUsage, "route: --mode: %v", err)
	}

	var docs []router.Doc
	if *catalog != "" {
		if docs, err = router.LoadCatalog(*catalog); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("route: --catalog %s: there is no such file", *catalog)
		} else if err != nil {
			return fmt.Errorf("route: --catalog: %w", err)
		}
	} else if entries, err := registry.ReadEntries(cfg.Registry); err == nil {
		for _, e := range entries {
			if e.Status == registry.OK {
				docs = append(docs, router.Doc{Server: e.Category, Name: e.Name, Description: e.Description, Params: router.ParamsFromSchema(e.Parameters)})
			}
		}
	}
	ix := router.Build(docs)
	if len(words) > 0 {
		q := strings.Join(words, " ")
		hits := ix.RouteContext(ctx, q, *topK, mode)
		if format.value == "json" {
			return writeJSON(stdout, struct {
				Query string       `json:"query"`
				Tools []router.Hit `json:"tools"`
			}{q, nonNilHits(hits)})
		}
		return writeHits(stdout, hits)
	}
	return routeLines(ctx, ix, stdin, stdout, *topK, mode, formatSet && format.value == "text")
}

// routeLines answers JSON lines {"id", "query"} from r, one JSON line each
// (or a text block each when text is set).
func routeLines(ctx context.Context, ix *router.Index, r io.Reader, w io.Writer, k int, m router.Mode, text bool) error {
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
			return fmt.Errorf(`route: standard input line %d is not a JSON object {"id": ..., "query": "..."}: %s (give QUERY as an argument to route one query)`, n, clip.String(line, 60))
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
			Tools []router.Hit    `json:"tools"`
		}{in.ID, nonNilHits(hits)}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("route: standard input: %w", err)
	}
	return bw.Flush()
}

func writeHits(w io.Writer, hits []router.Hit) error {
	var b strings.Builder
	if len(hits) == 0 {
		b.WriteString("no tools matched\n")
	}
	for i, h := range hits {
		fmt.Fprintf(&b, "%2d. %7.4f  %s / %s\n", i+1, h.Score, router.DomainName(h.Server), h.Name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// nonNilHits makes an empty result encode as [] rather than null.
func nonNilHits(h []router.Hit) []router.Hit {
	if h == nil {
		return []router.Hit{}
	}
	return h
}
