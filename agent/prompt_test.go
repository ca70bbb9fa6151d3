package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"adaptbot/llm/llmtest"
	"adaptbot/llm/provider"
	"adaptbot/router"
	"adaptbot/toolbox"
)

// catalogTools returns n tools with real names and descriptions from the
// LiveMCPBench catalog (cycled, with a suffix, past its 527 tools). Without
// the shared dataset it falls back to synthetic tools on a developer's
// machine, and fails the test under CI=true or ADAPTBOT_REQUIRE_DATASET=1.
func catalogTools(t testing.TB, n int) []*fakeTool {
	var base []router.Doc
	docs, err := router.LoadCatalog("../../shared/datasets/livemcpbench/catalog.json")
	switch {
	case err == nil:
		base = docs
	case os.Getenv("CI") == "true" || os.Getenv("ADAPTBOT_REQUIRE_DATASET") == "1":
		t.Fatalf("the LiveMCPBench dataset is required here (../shared/datasets/livemcpbench from the repository root): %v", err)
	default:
		t.Logf("shared dataset absent, synthetic tools: %v", err)
	}
	out := make([]*fakeTool, 0, n)
	for i := 0; i < n; i++ {
		name, desc, domain := fmt.Sprintf("tool_%d", i), fmt.Sprintf("does task number %d on some data", i), "general"
		if len(base) > 0 {
			d := base[i%len(base)]
			name, desc, domain = fmt.Sprintf("%s_%d", d.Name, i), d.Description, d.Server
		}
		out = append(out, &fakeTool{spec: toolbox.Spec{Name: name, Description: desc, Category: domain,
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}})
	}
	return out
}

// sentPromptTokens sends query to a through the real langchaingo client and
// the scripted server, which answers in text, and returns the tokens of the
// prompt the server received (tools and messages, at four bytes a token).
func sentPromptTokens(t testing.TB, a *Agent, query string) int {
	t.Helper()
	srv := llmtest.New(t, llmtest.Always(llmtest.Say("ok")))
	m, err := provider.New(context.Background(), provider.Config{Provider: "openai", OpenAIBaseURL: srv.BaseURL(), Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	a.model = m
	if _, err := a.Chat(context.Background(), Request{Message: query}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want the classifier's one", len(reqs))
	}
	return llmtest.Tokens(reqs[0].Prompt())
}

func agentWith(tools []*fakeTool, passive bool) *Agent {
	ft := newTools(tools...)
	ix := router.New()
	for _, t := range tools {
		ix.Upsert(router.Doc{Server: t.spec.Category, Name: t.spec.Name, Description: t.spec.Description})
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

// TestClassifierPromptStaysSmall checks the active-discovery goal on the
// request actually sent: the classifier prompt at 1,000 tools is within 10%
// of the prompt at 10 tools.
func TestClassifierPromptStaysSmall(t *testing.T) {
	sizes := []int{10, 100, 1000}
	active := map[int]int{}
	for _, n := range sizes {
		tools := catalogTools(t, n)
		active[n] = sentPromptTokens(t, agentWith(tools, false), sampleQuery)
		passive := sentPromptTokens(t, agentWith(tools, true), sampleQuery)
		t.Logf("%5d tools: active %6d tokens, passive %6d tokens", n, active[n], passive)
		if n >= 100 && passive <= active[n] {
			t.Errorf("%d tools: passive prompt (%d) is not larger than active (%d)", n, passive, active[n])
		}
	}
	if float64(active[1000]) > 1.1*float64(active[10]) {
		t.Errorf("active prompt grew from %d tokens at 10 tools to %d at 1,000 (goal: within 10%%)", active[10], active[1000])
	}
}

// BenchmarkClassifierPrompt reports the classifier prompt's tokens, as
// sent (estimated at four bytes a token), for 10, 100 and 1,000 tools,
// active and passive.
func BenchmarkClassifierPrompt(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		tools := catalogTools(b, n)
		for _, mode := range []string{"active", "passive"} {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				var tokens int
				for i := 0; i < b.N; i++ {
					tokens = sentPromptTokens(b, agentWith(tools, mode == "passive"), sampleQuery)
				}
				b.ReportMetric(float64(tokens), "prompt-tokens")
			})
		}
	}
}
