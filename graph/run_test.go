package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot/graph"
)

func mustCompile[S any](t testing.TB, g *graph.Graph[S]) *graph.Compiled[S] {
	t.Helper()
	c, err := g.Compile()
	if err != nil {
		t.Fatalf("Compile() error = %v", err)
	}
	return c
}

func nodesOf(tr graph.Trace) []string {
	var keys []string
	for _, s := range tr {
		keys = append(keys, s.Node)
	}
	return keys
}

func TestRunLinear(t *testing.T) {
	g := graph.New[state]()
	g.AddNode("a", visit("a"))
	g.AddNode("b", visit("b"))
	g.AddNode("c", visit("c"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddEdge("c", graph.End)
	c := mustCompile(t, g)

	got, trace, err := c.Run(t.Context(), state{N: 7})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	want := []string{"a", "b", "c"}
	if !slices.Equal(got.Path, want) || got.N != 7 {
		t.Errorf("Run() state = %+v, want N 7 and path %q", got, want)
	}
	if keys := nodesOf(trace); !slices.Equal(keys, want) {
		t.Errorf("trace nodes = %q, want %q", keys, want)
	}
	for _, s := range trace {
		if s.Err != "" || s.Duration < 0 {
			t.Errorf("trace step %+v: want no error and a non-negative duration", s)
		}
	}
}

// orchestrator mirrors the chat flow: classify, then general or execute, and
// execute may end in need_tool.
func orchestrator(t *testing.T) *graph.Compiled[*chat] {
	g := graph.New[*chat]()
	g.AddNode("classifier", func(_ context.Context, s *chat) (*chat, error) {
		s.path = append(s.path, "classifier")
		return s, nil
	})
	for _, k := range []string{"general", "execute", "synthesizer", "need_tool"} {
		g.AddNode(k, func(_ context.Context, s *chat) (*chat, error) {
			s.path = append(s.path, k)
			return s, nil
		})
	}
	g.AddEdge(graph.Start, "classifier")
	g.AddBranch("classifier", func(_ context.Context, s *chat) (string, error) {
		return s.intent, nil
	}, "general", "execute")
	g.AddBranch("execute", func(_ context.Context, s *chat) (string, error) {
		if s.toolMissing {
			return "need_tool", nil
		}
		return "synthesizer", nil
	}, "synthesizer", "need_tool")
	g.AddEdge("general", graph.End)
	g.AddEdge("synthesizer", graph.End)
	g.AddEdge("need_tool", graph.End)
	return mustCompile(t, g)
}

type chat struct {
	intent      string
	toolMissing bool
	path        []string
}

func TestRunBranch(t *testing.T) {
	c := orchestrator(t)
	tests := []struct {
		name string
		in   chat
		want []string
	}{
		{"general", chat{intent: "general"}, []string{"classifier", "general"}},
		{"tool", chat{intent: "execute"}, []string{"classifier", "execute", "synthesizer"}},
		{"missing tool", chat{intent: "execute", toolMissing: true}, []string{"classifier", "execute", "need_tool"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			got, trace, err := c.Run(t.Context(), &in)
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if got != &in {
				t.Errorf("Run() returned a different pointer than it was given")
			}
			if !slices.Equal(got.path, tt.want) {
				t.Errorf("path = %q, want %q", got.path, tt.want)
			}
			if keys := nodesOf(trace); !slices.Equal(keys, tt.want) {
				t.Errorf("trace nodes = %q, want %q", keys, tt.want)
			}
		})
	}
}

func TestRunUndeclaredTarget(t *testing.T) {
	c := orchestrator(t)
	_, trace, err := c.Run(t.Context(), &chat{intent: "synthesizer"})
	if err == nil {
		t.Fatal("Run() error = nil; want an error for an undeclared branch target")
	}
	for _, want := range []string{`branch from "classifier"`, `chose "synthesizer"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run() error = %q; want it to contain %q", err, want)
		}
	}
	if len(trace) != 1 || trace[0].Node != "classifier" || trace[0].Err != err.Error() {
		t.Errorf("trace = %+v; want one failed classifier step carrying the error", trace)
	}
}

// loop builds create -> check -> create ... ending when check sees n >= until.
func loop(t *testing.T, until int) *graph.Compiled[state] {
	g := graph.New[state]()
	g.AddNode("create", func(_ context.Context, s state) (state, error) {
		s.N++
		return s, nil
	})
	g.AddNode("check", visit("check"))
	g.AddEdge(graph.Start, "create")
	g.AddEdge("create", "check")
	g.AddBranch("check", func(_ context.Context, s state) (string, error) {
		if s.N >= until {
			return graph.End, nil
		}
		return "create", nil
	}, "create", graph.End)
	return mustCompile(t, g)
}

func TestRunStepLimit(t *testing.T) {
	tests := []struct {
		name      string
		until     int
		opts      []graph.RunOption
		wantSteps int
		wantLimit bool
	}{
		{"loop ends within default", 3, nil, 6, false},
		{"endless loop hits default", 1 << 30, nil, graph.DefaultMaxSteps, true},
		{"custom limit", 1 << 30, []graph.RunOption{graph.WithMaxSteps(4)}, 4, true},
		{"limit exactly enough", 2, []graph.RunOption{graph.WithMaxSteps(4)}, 4, false},
		{"non-positive limit keeps default", 1 << 30, []graph.RunOption{graph.WithMaxSteps(0)}, graph.DefaultMaxSteps, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, trace, err := loop(t, tt.until).Run(t.Context(), state{}, tt.opts...)
			if got := errors.Is(err, graph.ErrStepLimit); got != tt.wantLimit {
				t.Errorf("errors.Is(%v, ErrStepLimit) = %v, want %v", err, got, tt.wantLimit)
			}
			if !tt.wantLimit && err != nil {
				t.Errorf("Run() error = %v", err)
			}
			if len(trace) != tt.wantSteps {
				t.Errorf("len(trace) = %d, want %d", len(trace), tt.wantSteps)
			}
		})
	}
}

func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	g := graph.New[state]()
	g.AddNode("first", func(_ context.Context, s state) (state, error) {
		cancel()
		s.Path = append(s.Path, "first")
		return s, nil
	})
	g.AddNode("second", visit("second"))
	g.AddEdge(graph.Start, "first")
	g.AddEdge("first", "second")
	g.AddEdge("second", graph.End)

	got, trace, err := mustCompile(t, g).Run(ctx, state{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), `before node "second"`) {
		t.Errorf("Run() error = %q, want it to name node %q", err, "second")
	}
	if want := []string{"first"}; !slices.Equal(got.Path, want) || !slices.Equal(nodesOf(trace), want) {
		t.Errorf("path %q, trace %q; want both %q", got.Path, nodesOf(trace), want)
	}
}

type toolError struct{ tool string }

func (e *toolError) Error() string { return "tool " + e.tool + " failed" }

var errSentinel = errors.New("sentinel")

func TestRunNodeError(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"sentinel", errSentinel},
		{"wrapped sentinel", fmt.Errorf("calling model: %w", errSentinel)},
		{"typed", &toolError{tool: "weather"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graph.New[state]()
			g.AddNode("classify", visit("classify"))
			g.AddNode("execute", func(_ context.Context, s state) (state, error) {
				s.Path = append(s.Path, "execute")
				return s, tt.err
			})
			g.AddNode("after", visit("after"))
			g.AddEdge(graph.Start, "classify")
			g.AddEdge("classify", "execute")
			g.AddEdge("execute", "after")
			g.AddEdge("after", graph.End)

			got, trace, err := mustCompile(t, g).Run(t.Context(), state{})
			if want := fmt.Sprintf("graph: node %q: %v", "execute", tt.err); err == nil || err.Error() != want {
				t.Fatalf("Run() error = %v, want %q", err, want)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("errors.Is(err, cause) = false for %v", err)
			}
			var te *toolError
			if errors.As(tt.err, &te) && !errors.As(err, &te) {
				t.Errorf("errors.As(err, *toolError) = false for %v", err)
			}
			// The failing node's returned state is discarded.
			if want := []string{"classify"}; !slices.Equal(got.Path, want) {
				t.Errorf("state path = %q, want %q", got.Path, want)
			}
			if want := []string{"classify", "execute"}; !slices.Equal(nodesOf(trace), want) {
				t.Errorf("trace nodes = %q, want %q", nodesOf(trace), want)
			}
			if last := trace[len(trace)-1]; last.Err != err.Error() {
				t.Errorf("failing step Err = %q, want %q", last.Err, err.Error())
			}
		})
	}
}

func TestRunPanic(t *testing.T) {
	g := graph.New[state]()
	g.AddNode("boom", func(context.Context, state) (state, error) { panic("kaboom") })
	g.AddEdge(graph.Start, "boom")
	g.AddEdge("boom", graph.End)

	_, trace, err := mustCompile(t, g).Run(t.Context(), state{})
	var pe *graph.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Run() error = %v, want a *PanicError", err)
	}
	if got, want := err.Error(), `graph: node "boom": panic: kaboom`; got != want {
		t.Errorf("Run() error = %q, want %q", got, want)
	}
	if pe.Value != "kaboom" || len(pe.Stack) == 0 {
		t.Errorf("PanicError = {%v, %d stack bytes}; want value and stack", pe.Value, len(pe.Stack))
	}
	if len(trace) != 1 {
		t.Errorf("len(trace) = %d, want 1", len(trace))
	}
}

func TestRunTraceAndHook(t *testing.T) {
	g := graph.New[state]()
	g.AddNode("fast", visit("fast"))
	g.AddNode("slow", func(_ context.Context, s state) (state, error) {
		time.Sleep(5 * time.Millisecond)
		return s, nil
	})
	g.AddNode("fail", func(_ context.Context, s state) (state, error) { return s, errSentinel })
	g.AddEdge(graph.Start, "fast")
	g.AddEdge("fast", "slow")
	g.AddEdge("slow", "fail")
	g.AddEdge("fail", graph.End)

	var hooked graph.Trace
	_, trace, err := mustCompile(t, g).Run(t.Context(), state{}, graph.WithStepHook(func(s graph.Step) {
		hooked = append(hooked, s)
	}))
	if !errors.Is(err, errSentinel) {
		t.Fatalf("Run() error = %v, want %v", err, errSentinel)
	}
	if want := []string{"fast", "slow", "fail"}; !slices.Equal(nodesOf(trace), want) {
		t.Fatalf("trace nodes = %q, want %q", nodesOf(trace), want)
	}
	if !slices.Equal(hooked, trace) {
		t.Errorf("hook saw %+v, trace is %+v", hooked, trace)
	}
	if trace[1].Duration < 5*time.Millisecond {
		t.Errorf("slow step Duration = %v, want at least 5ms", trace[1].Duration)
	}
	if trace[0].Err != "" || trace[1].Err != "" || trace[2].Err != `graph: node "fail": sentinel` {
		t.Errorf("step errors = %q, %q, %q", trace[0].Err, trace[1].Err, trace[2].Err)
	}
}

func TestStepJSON(t *testing.T) {
	tests := []struct {
		step graph.Step
		want string
	}{
		{graph.Step{Node: "classifier", Duration: 12300 * time.Microsecond}, `{"node":"classifier","ms":12.3}`},
		{graph.Step{Node: "execute", Duration: 1500*time.Microsecond + 400, Err: "boom"}, `{"node":"execute","ms":1.5,"error":"boom"}`},
		{graph.Step{Node: "zero"}, `{"node":"zero","ms":0}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.step)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("json.Marshal(%+v) = %s, want %s", tt.step, got, tt.want)
		}
		var back graph.Step
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if want := tt.step.Duration.Truncate(time.Microsecond); back.Node != tt.step.Node || back.Duration != want || back.Err != tt.step.Err {
			t.Errorf("round trip of %s = %+v, want duration %v", got, back, want)
		}
	}
	got, err := json.Marshal(graph.Trace{{Node: "a", Duration: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"node":"a","ms":1}]`; string(got) != want {
		t.Errorf("json.Marshal(trace) = %s, want %s", got, want)
	}
}

func TestRunConcurrent(t *testing.T) {
	c := loop(t, 3)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, trace, err := c.Run(t.Context(), state{})
				if err != nil || got.N != 3 || len(trace) != 6 || len(got.Path) != 3 {
					t.Errorf("Run() = N %d, %d path, %d steps, %v; want 3, 3, 6, nil", got.N, len(got.Path), len(trace), err)
					return
				}
			}
		})
	}
	wg.Wait()
}
