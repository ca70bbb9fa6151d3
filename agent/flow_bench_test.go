package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot/llm"
	"adaptbot/toolbox"
)

// The messages of BenchmarkFlow, one per kind.
var benchMessages = []struct{ kind, text string }{
	{"direct", "hello there, how are you today?"},
	{"one_tool", "how many km is 5 miles?"},
	{"two_tools", "convert 5 miles to km, then multiply by 3"},
	{"need_tool", "translate this sentence into Klingon"},
	{"build", "make a tool that converts numbers to roman numerals"},
}

// benchTools are the two tools the benchmark's messages use, among n-2
// catalog tools.
func benchTools(tb testing.TB, n int) []*fakeTool {
	convert := &fakeTool{spec: toolbox.Spec{Name: "unit_converter", Category: "math",
		Description: "Converts a number between units of the same quantity: length (km, miles, m, feet), mass (kg, pounds), temperature (°C, °F), data (MiB, GB).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"value":{"type":"number","description":"the number to convert"},"from":{"type":"string","description":"the unit of value, e.g. km, miles"},"to":{"type":"string","description":"the unit to convert to"}},"required":["value","from","to"],"additionalProperties":false}`)},
		fn: func(json.RawMessage) (string, error) { return "5 miles = 8.04672 km", nil }}
	calc := &fakeTool{spec: toolbox.Spec{Name: "calculator", Category: "math",
		Description: "Evaluates an arithmetic expression: + - * / ^ %, parentheses, sqrt, min, max, pi and e.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","description":"the arithmetic expression, e.g. (2 + 3) * 4"}},"required":["expression"],"additionalProperties":false}`)},
		fn: func(json.RawMessage) (string, error) { return "8.04672 * 3 = 24.14016", nil }}
	return append(catalogTools(tb, n-2), convert, calc)
}

// benchModel is a zero-latency model scripted like a good one; it counts
// calls and estimates tokens at four bytes a token, the request's messages
// and functions as the prompt and the reply's text and arguments as the
// completion.
type benchModel struct{ calls, prompt, completion atomic.Int64 }

func (m *benchModel) Name() string { return "bench" }

func (m *benchModel) Generate(_ context.Context, r llm.Request) (llm.Response, error) {
	resp := m.reply(r)
	m.count(r, resp)
	if r.Stream != nil && resp.Content != "" {
		r.Stream(resp.Content)
	}
	return resp, nil
}

func (m *benchModel) count(r llm.Request, resp llm.Response) {
	p := 0
	for _, msg := range r.Messages {
		p += len(msg.Content)
		for _, c := range msg.Calls {
			p += len(c.Name) + len(c.Arguments)
		}
	}
	for _, f := range r.Functions {
		p += len(f.Name) + len(f.Description) + len(f.Parameters)
	}
	c := len(resp.Content)
	for _, cl := range resp.Calls {
		c += len(cl.Name) + len(cl.Arguments)
	}
	m.calls.Add(1)
	m.prompt.Add(int64(p / 4))
	m.completion.Add(int64(c / 4))
}

func (m *benchModel) reply(r llm.Request) llm.Response {
	msg := r.Messages[1].Content // no history: the message follows the system prompt
	switch {
	case isSynthesizer(r):
		if strings.HasPrefix(msg, "convert 5 miles") && !ranTool(r, "calculator") {
			return call("calculator", `{"expression":"8.04672 * 3"}`)
		}
		return say("5 miles is 8.05 km" + map[bool]string{true: "; times 3 that is 24.14.", false: "."}[strings.HasPrefix(msg, "convert")])
	case isClassifier(r):
		switch {
		case strings.HasPrefix(msg, "hello"):
			return say("Hello! I am well, thank you. How can I help?")
		case strings.HasPrefix(msg, "make a tool"):
			return call(fnBuild, `{"action":"create","tool":"roman_numerals","summary":"Converts whole numbers to Roman numerals and back."}`)
		case strings.HasPrefix(msg, "translate"):
			return call(fnNeedTool, `{"capability":"translation into Klingon"}`)
		}
		// A tool is needed: ask for it when it is not offered.
		if !hasFunction(r, "unit_converter") {
			if hasFunction(r, fnRequestTools) {
				return call(fnRequestTools, `{"domain":"math","operation":"convert units: miles to km"}`)
			}
			return call(fnNeedTool, `{}`)
		}
		return call("unit_converter", `{"value":5,"from":"miles","to":"km"}`)
	}
	return say("")
}

// ranTool reports whether r holds a result of the named tool's call.
func ranTool(r llm.Request, name string) bool {
	for _, m := range r.Messages {
		if m.Role == llm.Tool && m.Name == name {
			return true
		}
	}
	return false
}

type benchBuilder struct{}

func (benchBuilder) Build(_ context.Context, req BuildRequest, _ func(BuildStep)) (*BuildResult, error) {
	return &BuildResult{Action: req.Action, Tool: req.Tool, OK: true, Summary: "Created " + req.Tool}, nil
}

// BenchmarkFlow measures each kind of message at 5, 100 and 1,000 tools
// with a zero-latency scripted model: model round trips, prompt and
// completion tokens (estimated at four bytes a token) and the p50 time of
// the agent's own work. A build is counted up to the call that starts it:
// the model calls before the code is written.
func BenchmarkFlow(b *testing.B) {
	for _, n := range []int{5, 100, 1000} {
		tools := benchTools(b, n)
		for _, m := range benchMessages {
			b.Run(fmt.Sprintf("%s/%d", m.kind, n), func(b *testing.B) {
				model := &benchModel{}
				a := agentWith(tools, false)
				a.model = model
				ctx := context.Background()
				times := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					began := time.Now()
					res, err := a.Chat(ctx, Request{Message: m.text, Builder: benchBuilder{}})
					times = append(times, time.Since(began))
					if err != nil {
						b.Fatal(err)
					}
					if i == 0 && m.kind != "direct" && m.kind != "need_tool" && m.kind != "build" && res.Execution == nil {
						b.Fatalf("%s: no tool ran: %+v", m.kind, res)
					}
				}
				b.StopTimer()
				slices.Sort(times)
				per := float64(b.N)
				b.ReportMetric(float64(model.calls.Load())/per, "calls/op")
				b.ReportMetric(float64(model.prompt.Load())/per, "prompt-tok/op")
				b.ReportMetric(float64(model.completion.Load())/per, "completion-tok/op")
				b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
			})
		}
	}
}
