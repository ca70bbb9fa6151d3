// Command routeeval scores AdaptBot's router on a dataset in the
// LiveMCPBench layout (DIR/catalog.json and DIR/queries.jsonl) beside the
// baselines, and times Route at the catalog's size and at 10,000 tools.
//
//	go run ./router/routereval/cmd/routeeval router/testdata/mini
//	go run ./router/routereval/cmd/routeeval --flows ../shared/datasets/livemcpbench
//
// It is a program of its own, not a command of adaptbot, because the
// harness runs a scripted model (llm/llmtest) and links the test kit, which
// the product binary must not carry.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"adaptbot/router/routereval"
)

const usage = `Usage: go run ./router/routereval/cmd/routeeval [--format text|json] [--latency=false] [--flows] DIR

Scores the router and the baselines on DIR/catalog.json and DIR/queries.jsonl
(the LiveMCPBench layout) and times Route at the catalog's size and at 10,000
tools. --flows adds the model traffic of a one-tool answer at 5, 100 and 527
tools (round trips, prompt tokens, tokens a prompt cache cannot serve) beside
langchaingo's OpenAI functions agent, both against a scripted model on
loopback; run it from the repository root, as it runs the peer with go run in
router/routereval/peer.

Flags:
  --format text|json  text (default): Markdown tables; json: the report
  --latency=false     skip timing Route
  --flows             also compare the model traffic with langchaingo's agent
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "routeeval:", err)
		os.Exit(1)
	}
}

// errUsage is run's answer to a bad command line, after it has said why.
var errUsage = errors.New("bad command line")

// run is the whole program but for process concerns, so tests can call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("routeeval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "text", "")
	latency := fs.Bool("latency", true, "")
	flows := fs.Bool("flows", false, "")
	bad := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "routeeval: "+format+"\n\n%s", append(a, usage)...)
		return errUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return err
		}
		return bad("%v", err)
	}
	if *format != "text" && *format != "json" {
		return bad("--format must be text or json, not %q", *format)
	}
	if fs.NArg() != 1 {
		return bad("want one DIR, got %q", fs.Args())
	}
	dir := fs.Arg(0)
	var sizes []int
	if *latency {
		sizes = []int{0, 10000} // 0: the catalog as it is
	}
	r, err := routereval.Evaluate(dir, sizes, 3)
	if err != nil {
		return err
	}
	if *flows {
		if err := r.CompareFlows(ctx, dir, filepath.Join("router", "routereval", routereval.PeerDir), []int{5, 100, 527}); err != nil {
			return fmt.Errorf("--flows: %w", err)
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteText(stdout)
}
