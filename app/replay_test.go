package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/llm/llmtest/replay"
)

// Recorded real provider traffic, replayed through the whole chat: the real
// provider clients talk HTTP to a loopback server that answers with the
// bytes real models sent (llm/provider/testdata/httprr, see its README).
// The tools the recordings call are registered as test tools; their names
// are rewritten to AdaptBot's snake_case, and nothing else in the bytes is.

// replayTools are the tools the recorded models call, as tool sources.
var replayTools = map[string]string{
	"get_current_weather": `{Location string ` + "`json:\"location\" jsonschema:\"the city and state, e.g. San Francisco, CA\"`" + `
	Unit string ` + "`json:\"unit,omitempty\" jsonschema:\"celsius or fahrenheit\"`" + `}|"weather in " + in.Location + ": 72 and sunny"`,
	"get_current_time": `{Location string ` + "`json:\"location\" jsonschema:\"the city and state, e.g. San Francisco, CA\"`" + `}|"time in " + in.Location + ": 10:30"`,
	"get_weather":      `{Location string ` + "`json:\"location\" jsonschema:\"the city, e.g. Boston\"`" + `}|"weather in " + in.Location + ": 72 and sunny"`,
	"get_time":         `{Location string ` + "`json:\"location\" jsonschema:\"the city, e.g. Boston\"`" + `}|"time in " + in.Location + ": 10:30"`,
	"calculate_tip": `{BillAmount float64 ` + "`json:\"billAmount\" jsonschema:\"the total bill amount\"`" + `
	TipPercentage float64 ` + "`json:\"tipPercentage\" jsonschema:\"the tip percentage\"`" + `}|fmt.Sprintf("tip %.2f", in.BillAmount*in.TipPercentage/100)`,
	"get_waiter_name": `{}|"the waiter is Ada"`,
	"search": `{SearchEngine string ` + "`json:\"search_engine\" jsonschema:\"the search engine\"`" + `
	SearchQuery string ` + "`json:\"search_query\" jsonschema:\"what to search for\"`" + `}|"searched " + in.SearchEngine + " for " + in.SearchQuery`,
}

// toolSource writes a test tool: an Input struct and a one-line answer.
func toolSource(name, spec string) string {
	input, expr, _ := strings.Cut(spec, "|")
	return fmt.Sprintf(`// Package %[1]s is a test tool that answers a fixed reading, for replayed model traffic.
package %[1]s

import (
	"context"
	"fmt"
)

// Category is the tool's domain.
const Category = "test"

var _ = fmt.Sprint

// Input is what the model passes.
type Input struct %[2]s

// Output is the tool's answer.
type Output struct {
	Text string `+"`json:\"text\"`"+`
}

// Execute answers a fixed reading.
func Execute(ctx context.Context, in Input) (Output, error) {
	return Output{Text: %[3]s}, nil
}
`, name, input, expr)
}

// renames maps the recordings' function names to the test tools'.
var renames = [][2]string{
	{"getCurrentWeather", "get_current_weather"}, {"getCurrentTime", "get_current_time"},
	{"getWeather", "get_weather"}, {"calculateTip", "calculate_tip"}, {"getWaiterName", "get_waiter_name"},
}

// recording loads a recording's exchanges (all, or those numbered in pick).
func recording(t *testing.T, name string, pick ...int) []replay.Exchange {
	t.Helper()
	ex, err := replay.Load(filepath.Join("..", "llm", "provider", "testdata", "httprr", name+".httprr"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range renames {
		ex = replay.Rename(ex, r[0], r[1])
	}
	if len(pick) == 0 {
		return ex
	}
	var out []replay.Exchange
	for _, i := range pick {
		out = append(out, ex[i])
	}
	return out
}

type replayCase struct {
	name     string
	kind     string // openrouter, openai, deepseek, anthropic, ollama
	model    string
	exchange []replay.Exchange
	message  string
	stream   bool
	// tools that must run, each with a piece of its arguments.
	tools map[string]string
	// answer is a piece of the answer; reasoning a piece of the trace's
	// reasoning that must not be in the answer.
	answer, reasoning string
	// status and errs, for a provider's error.
	status int
	errs   []string
}

func (c replayCase) env(url string) map[string]string {
	env := map[string]string{"ADAPTBOT_MODEL": c.model, "ADAPTBOT_MODEL_RETRIES": "0"}
	switch c.kind {
	case "openrouter":
		env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"] = url+"/api/v1", "test"
	case "openai":
		env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"] = url+"/v1", "test"
	case "deepseek": // https://api.deepseek.com, without /v1
		env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"] = url, "test"
	case "anthropic":
		env["ADAPTBOT_LLM_PROVIDER"], env["ANTHROPIC_API_KEY"], env["ANTHROPIC_BASE_URL"] = "anthropic", "test", url
	case "ollama":
		env["OLLAMA_HOST"] = url
	}
	return env
}

func replayCases(t *testing.T) []replayCase {
	weather := map[string]string{"get_current_weather": `"location":"Boston, MA"`}
	both := map[string]string{"get_current_weather": "Boston, MA", "get_current_time": "Boston, MA"}
	orText := recording(t, "openrouter-llama-3.2-3b-text-stream", 0)
	oaText := recording(t, "openai-gpt-3.5-turbo-text")
	return []replayCase{
		{name: "gpt-4.1 streamed via OpenRouter", kind: "openrouter", model: "openai/gpt-4.1", stream: true,
			exchange: append(recording(t, "openrouter-gpt-4.1-stream"), orText...), message: "What is the weather like in Boston, MA?",
			tools: weather},
		{name: "qwen3-32b streamed via OpenRouter", kind: "openrouter", model: "qwen/qwen3-32b", stream: true,
			exchange: append(recording(t, "openrouter-qwen3-32b-stream"), orText...), message: "What is the weather like in Boston, MA?",
			tools: map[string]string{"get_current_weather": `"unit":"celsius"`}, reasoning: "the user is asking about the weather in Boston"},
		{name: "gemini-2.5-flash parallel streamed via OpenRouter", kind: "openrouter", model: "google/gemini-2.5-flash", stream: true,
			exchange: append(recording(t, "openrouter-gemini-2.5-flash-parallel-stream"), orText...), message: "What are the weather and time in Boston, MA?",
			tools: both},
		{name: "mistral-medium-3 parallel via OpenRouter", kind: "openrouter", model: "mistralai/mistral-medium-3",
			exchange: append(recording(t, "openrouter-mistral-medium-3-parallel"), oaText...), message: "What are the weather and time in Boston, MA?",
			tools: both, answer: "You are a dog"},
		{name: "gpt-3.5-turbo via OpenAI", kind: "openai", model: "gpt-3.5-turbo",
			exchange: append(recording(t, "openai-gpt-3.5-turbo-tool"), oaText...), message: "What is the weather like in Boston?",
			tools: map[string]string{"get_current_weather": `"location":"Boston"`}, answer: "You are a dog"},
		{name: "gpt-4o via OpenAI", kind: "openai", model: "gpt-4o-2024-08-06",
			exchange: append(recording(t, "openai-gpt-4o-tool"), oaText...), message: "How old is Bob Odenkirk? Search for it.",
			tools: map[string]string{"search": "Bob Odenkirk age"}, answer: "You are a dog"},
		{name: "gpt-4o-mini via OpenRouter", kind: "openrouter", model: "openai/gpt-4o-mini",
			exchange: append(recording(t, "openrouter-gpt-4o-mini-tool"), oaText...), message: "What is the weather like in Boston, MA?",
			tools: weather, answer: "You are a dog"},
		{name: "deepseek-chat text and parallel calls in one turn, DeepSeek", kind: "deepseek", model: "deepseek-chat",
			exchange: append(recording(t, "deepseek-chat-parallel"), oaText...), message: "What are the weather and time in Boston, MA?",
			tools: map[string]string{"get_current_weather": `"unit":"fahrenheit"`, "get_current_time": "Boston, MA"}, answer: "You are a dog"},
		{name: "deepseek-chat text and parallel calls in one turn streamed, DeepSeek", kind: "deepseek", model: "deepseek-chat", stream: true,
			exchange: append(recording(t, "deepseek-chat-parallel-stream"), orText...), message: "What are the weather and time in Boston, MA?",
			tools: map[string]string{"get_current_weather": `"unit":"fahrenheit"`, "get_current_time": "Boston, MA"}},
		{name: "grok-4.5 with reasoning, xAI", kind: "openai", model: "grok-4.5",
			exchange: append(recording(t, "xai-grok-4.5-tool"), oaText...), message: "What is the weather like in Boston, MA?",
			tools: map[string]string{"get_current_weather": `"location":"Boston, MA"`}, answer: "You are a dog",
			reasoning: "The user wants to know the weather in Boston"},
		{name: "llama-3.2-3b refused with 429 via OpenRouter", kind: "openrouter", model: "meta-llama/llama-3.2-3b-instruct:free", stream: true,
			exchange: recording(t, "openrouter-llama-3.2-3b-text-stream", 1), message: "hello",
			status: 503, errs: []string{"meta-llama/llama-3.2-3b-instruct:free", "rate-limited"}},
		{name: "claude-sonnet-4.5 thinking, parallel, Anthropic", kind: "anthropic", model: "claude-sonnet-4-5",
			exchange: append(recording(t, "anthropic-claude-sonnet-4-5-thinking-parallel"), recording(t, "anthropic-claude-3-opus-text")...),
			message:  "What's the weather and time in Boston?", tools: map[string]string{"get_weather": "Boston", "get_time": "Boston"},
			answer: "functioning properly", reasoning: "The user is asking for both the weather and time in Boston"},
		{name: "claude-sonnet-4.5 parallel streamed, Anthropic", kind: "anthropic", model: "claude-sonnet-4-5", stream: true,
			exchange: append(recording(t, "anthropic-claude-sonnet-4-5-parallel-stream"), recording(t, "anthropic-claude-3-opus-text-stream")...),
			message:  "Calculate a 15% tip on a $50 bill and tell me who is the waiter", tools: map[string]string{"calculate_tip": `"billAmount":50`, "get_waiter_name": "{}"},
			answer: "1\n2\n3"},
		{name: "gpt-oss:120b, Ollama", kind: "ollama", model: "gpt-oss:120b",
			exchange: recording(t, "ollama-gpt-oss-120b-tool"), message: "What's the weather like in San Francisco?",
			tools: map[string]string{"get_weather": `"location":"San Francisco, CA"`}, answer: "sunny", reasoning: "User asks about weather in San Francisco"},
		{name: "gpt-oss:120b streamed, Ollama", kind: "ollama", model: "gpt-oss:120b", stream: true,
			exchange: append(recording(t, "ollama-gpt-oss-120b-tool", 0), recording(t, "ollama-gemma3-1b-text-stream")...), message: "What's the weather like in San Francisco?",
			tools: map[string]string{"get_weather": `"location":"San Francisco, CA"`}, answer: "here we go", reasoning: "User asks about weather in San Francisco"},
		{name: "gemma3:1b has no tools, Ollama", kind: "ollama", model: "gemma3:1b",
			exchange: recording(t, "ollama-gemma3-1b-no-tools"), message: "Which date do we have today?",
			status: 502, errs: []string{"gemma3:1b", "does not support tools"}},
	}
}

// TestReplayedProviders replays real replies of real models through the
// whole chat: the tools the model called run with the arguments it sent,
// parallel calls all run, the answer is the recorded one, reasoning stays
// in the trace and out of the answer, and a provider's refusal is a clear
// error naming the model and the cause, never a 500.
func TestReplayedProviders(t *testing.T) {
	for _, c := range replayCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own server and recording
			srv := replay.New(t, c.exchange...)
			in := start(t, c.env(srv.URL), func(dir string) {
				for name, spec := range replayTools {
					writeTool(t, dir, name, toolSource(name, spec))
				}
			})
			body, _ := json.Marshal(map[string]string{"message": c.message})
			var res map[string]any
			var status int
			streamed := ""
			if c.stream {
				code, _, evs := in.events(t, "/chat", string(body))
				status = code
				for _, ev := range evs {
					name, data, _ := strings.Cut(ev, " ")
					switch name {
					case "token":
						var tok struct{ Text string }
						json.Unmarshal([]byte(data), &tok)
						streamed += tok.Text
					case "result", "error":
						json.Unmarshal([]byte(data), &res)
						if name == "error" {
							if s, ok := res["status"].(float64); ok {
								status = int(s)
							}
						}
					}
				}
			} else {
				status, res = in.do(t, "POST", "/chat", string(body))
			}
			raw, _ := json.Marshal(res)
			if c.status != 0 {
				if status != c.status {
					t.Errorf("status = %d, want %d: %s", status, c.status, raw)
				}
				for _, e := range c.errs {
					if !strings.Contains(string(raw), e) {
						t.Errorf("error does not say %q: %s", e, raw)
					}
				}
				return
			}
			if status != 200 {
				t.Fatalf("status = %d: %s", status, raw)
			}
			var out struct {
				Response  string `json:"response"`
				Execution *bool  `json:"tool_execution_success"`
				Trace     []struct {
					Tool      string          `json:"tool"`
					Arguments json.RawMessage `json:"arguments"`
					Error     string          `json:"error"`
					Reasoning string          `json:"reasoning"`
				} `json:"trace"`
			}
			json.Unmarshal(raw, &out)
			ran := map[string]string{}
			reasoning := ""
			for _, st := range out.Trace {
				if st.Tool != "" {
					ran[st.Tool] = string(st.Arguments) + st.Error
				}
				reasoning += st.Reasoning
			}
			for tool, args := range c.tools {
				if got, ok := ran[tool]; !ok || !strings.Contains(got, args) {
					t.Errorf("%s ran with %q (ran: %v), want arguments with %q", tool, got, ran, args)
				}
			}
			if len(ran) != len(c.tools) || out.Execution == nil || !*out.Execution {
				t.Errorf("tools ran = %v, execution = %v; want %v", ran, out.Execution, c.tools)
			}
			if c.answer != "" && !strings.Contains(out.Response, c.answer) {
				t.Errorf("answer = %q, want it to hold %q", out.Response, c.answer)
			}
			// The stream may begin with what the model said beside its calls.
			if c.stream && !strings.HasSuffix(strings.TrimSpace(streamed), strings.TrimSpace(out.Response)) {
				t.Errorf("streamed %q, answered %q", streamed, out.Response)
			}
			if c.reasoning != "" {
				if !strings.Contains(reasoning, c.reasoning) {
					t.Errorf("trace's reasoning = %q, want it to hold %q", reasoning, c.reasoning)
				}
				if strings.Contains(out.Response, c.reasoning) || strings.Contains(streamed, c.reasoning) {
					t.Errorf("reasoning leaked into the answer: %q", out.Response)
				}
			}
			if n := srv.Left(); n != 0 {
				t.Errorf("%d recorded replies were not asked for", n)
			}
			if c.kind == "ollama" {
				offered := false
				for _, g := range srv.Got() {
					if g.Method == "POST" {
						offered = strings.Contains(string(g.Body), `"tools":[`) && strings.Contains(string(g.Body), `"get_weather"`)
						break
					}
				}
				if !offered {
					t.Errorf("Ollama was not offered the tools")
				}
			}
		})
	}
}
