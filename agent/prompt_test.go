package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"adaptbot/router"
	"adaptbot/toolbox"
)

// catalogTools returns n tools with real names and descriptions from the
// LiveMCPBench catalog (cycled, with a suffix, past its 527 tools), or
// synthetic ones when the shared dataset is absent.
func catalogTools(n int) []*fakeTool {
	var base []router.Doc
	if docs, err := router.LoadCatalog("../../shared/datasets/livemcpbench/catalog.json"); err == nil {
		base = docs
	}
	out := make([]*fakeTool, 0, n)
	for i := 0; i < n; i++ {
		name, desc, domain := fmt.Sprintf("tool_%d", i), fmt.Sprintf("does task number %d on some data", i), "general"
		if len(base) > 0 {
			d := base[i%len(base)]
			name, desc, domain = fmt.Sprintf("%s_%d", d.Name, i), d.Description, d.Server
		}
		out = append(out, &fakeTool{spec: toolbox.Spec{Name: name, Description: desc, Domain: domain,
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}})
	}
	return out
}

// promptTokens estimates the classifier prompt for query with the given
// tools: the system prompt and the functions offered, at four bytes a token
// (the usual rule of thumb for English; no tokenizer is available offline).
func promptTokens(a *Agent, query string) int {
	shortlist, whole := a.shortlist(context.Background(), query)
	left := a.cfg.MaxDiscovery
	if whole {
		left = 0
	}
	n := len(classifierSystem(left)) + len(query)
	for _, fn := range classifierFunctions(toolFunctions(shortlist), left > 0) {
		n += len(fn.Name) + len(fn.Description) + len(fn.Parameters)
	}
	return n / 4
}

func agentWith(tools []*fakeTool, passive bool) *Agent {
	ft := newTools(tools...)
	ix := router.New()
	for _, t := range tools {
		ix.Upsert(router.Doc{Server: t.spec.Domain, Name: t.spec.Name, Description: t.spec.Description})
	}
	a, _ := New(Deps{Tools: ft, Finder: routerFinder{ix}}, Config{Passive: passive})
	return a
}

type routerFinder struct{ ix *router.Index }

func (f routerFinder) Find(ctx context.Context, q string, k int) []string {
	var out []string
	for _, h := range f.ix.RouteContext(ctx, q, k, router.Fused) {
		out = append(out, h.Name)
	}
	return out
}

const sampleQuery = "What will the weather be like in Paris tomorrow, and should I take an umbrella?"

// TestClassifierPromptStaysSmall checks the active-discovery goal: the
// classifier prompt at 1,000 tools is within 10% of the prompt at 10 tools.
func TestClassifierPromptStaysSmall(t *testing.T) {
	sizes := []int{10, 100, 1000}
	active := map[int]int{}
	for _, n := range sizes {
		tools := catalogTools(n)
		active[n] = promptTokens(agentWith(tools, false), sampleQuery)
		passive := promptTokens(agentWith(tools, true), sampleQuery)
		t.Logf("%5d tools: active %6d tokens, passive %6d tokens", n, active[n], passive)
		if n >= 100 && passive <= active[n] {
			t.Errorf("%d tools: passive prompt (%d) is not larger than active (%d)", n, passive, active[n])
		}
	}
	if float64(active[1000]) > 1.1*float64(active[10]) {
		t.Errorf("active prompt grew from %d tokens at 10 tools to %d at 1,000 (goal: within 10%%)", active[10], active[1000])
	}
}

// BenchmarkClassifierPrompt reports classifier prompt tokens (estimated at
// four bytes a token) for 10, 100 and 1,000 tools, active and passive.
func BenchmarkClassifierPrompt(b *testing.B) {
	if _, err := os.Stat("../../shared/datasets/livemcpbench/catalog.json"); err != nil {
		b.Log("shared dataset absent: synthetic tool descriptions")
	}
	for _, n := range []int{10, 100, 1000} {
		tools := catalogTools(n)
		for _, mode := range []string{"active", "passive"} {
			a := agentWith(tools, mode == "passive")
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				var tokens int
				for i := 0; i < b.N; i++ {
					tokens = promptTokens(a, sampleQuery)
				}
				b.ReportMetric(float64(tokens), "prompt-tokens")
			})
		}
	}
}
