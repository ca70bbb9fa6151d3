// Command peer answers routereval.FlowQuestion with langchaingo's OpenAI
// functions agent, which offers every tool on every call, against the same
// scripted model as AdaptBot's side of the comparison, and prints its costs
// as JSON (routereval.FlowRow). It is its own module so that langchaingo's
// agents package, and the template engines it imports, stay out of
// AdaptBot's build. routereval.PeerFlows runs it; by hand:
//
//	cd router/routereval/peer && go run . -dataset ../../../../shared/datasets/livemcpbench -tools 5 -tools 100 -tools 527
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/tools"

	"adaptbot/router/routereval"
)

// sizes collects repeated -tools flags.
type sizes []int

func (s *sizes) String() string { return fmt.Sprint(*s) }
func (s *sizes) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 {
		return fmt.Errorf("-tools %q: want a number of tools, at least 2", v)
	}
	*s = append(*s, n)
	return nil
}

// tool adapts a routereval.FlowTool to langchaingo's tools.Tool.
type tool struct{ routereval.FlowTool }

func (t tool) Call(ctx context.Context, input string) (string, error) {
	return t.FlowTool.Call(ctx, json.RawMessage(input))
}

func main() {
	dataset := flag.String("dataset", "", "the LiveMCPBench folder (catalog.json, queries.jsonl)")
	var n sizes
	flag.Var(&n, "tools", "a catalog size (repeat for several)")
	flag.Parse()
	if err := run(*dataset, n); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}

func run(dataset string, sizes []int) error {
	docs, _, err := routereval.LoadDataset(dataset)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var rows []routereval.FlowRow
	for _, n := range sizes {
		var ts []tools.Tool
		for _, t := range routereval.FlowTools(docs, n) {
			ts = append(ts, tool{t})
		}
		row, err := routereval.MeasureFlow(n, "langchaingo OpenAI functions agent", func(base string) (string, error) {
			m, err := openai.New(openai.WithBaseURL(base), openai.WithToken("unused"), openai.WithModel("scripted"))
			if err != nil {
				return "", err
			}
			ex := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(m, ts), agents.WithMaxIterations(5))
			return chains.Run(ctx, ex, routereval.FlowQuestion)
		})
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	return json.NewEncoder(os.Stdout).Encode(rows)
}
