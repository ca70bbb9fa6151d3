package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"adaptbot/llm/llmtest"
	"adaptbot/toolbox"
)

// The OpenAI-compatible door met by real clients: the official openai npm
// package and the Vercel AI SDK, installed in testdata/openai-client by
// `npm ci --prefix app/testdata/openai-client` (.ci/run does). Without
// them the test skips on a developer's machine, and fails in CI
// (ADAPTBOT_REQUIRE_OPENAI_CLIENTS=1, or CI=true).

// openAIClientDir is where the clients are installed.
const openAIClientDir = "testdata/openai-client"

// openAIScript is a model for the door's cases: it greets, calls the
// calculator for a sum, offers a build for Roman numerals until the tool
// exists (romanScript writes it) and then calls it, and calls the client's
// get_weather when offered; after a tool's result it answers from it.
func openAIScript(t *testing.T) func(llmtest.Request) llmtest.Reply {
	build := romanScript(t)
	return func(r llmtest.Request) llmtest.Reply {
		if isSynthesizer(r) {
			return llmtest.Say("Here you go: " + lastOutput(r))
		}
		if !isClassifier(r) {
			return build(r) // the generator's calls
		}
		q := r.LastUser()
		switch {
		case strings.Contains(q, "roman"):
			if r.Schema("roman_numerals") == nil {
				return llmtest.Call("need_tool", `{"capability":"roman numerals"}`)
			}
			return llmtest.Call("roman_numerals", `{"number": 2026}`)
		case strings.Contains(q, "6 times 7"):
			return llmtest.Call(toolbox.FunctionName("calculator"), `{"expression": "6*7"}`)
		case strings.Contains(q, "weather") && r.Schema("get_weather") != nil:
			return llmtest.Call("get_weather", `{"city": "Paris"}`)
		}
		return llmtest.Say("Hello from AdaptBot, a scripted model.")
	}
}

// openAIServer starts AdaptBot beyond loopback, where keys are required,
// with the door's script, and returns it with a builder's and a user's key.
func openAIServer(t *testing.T, env map[string]string) (in *instance, builder, user string) {
	t.Helper()
	srv := llmtest.New(t, openAIScript(t))
	full := modelEnv(srv)
	full["ADAPTBOT_ADDR"] = "0.0.0.0:0"
	full["ADAPTBOT_ADMIN_TOKEN"] = "s3cret-admin-token-0123"
	for k, v := range env {
		full[k] = v
	}
	in = start(t, full)
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	add := func(name, role string) string {
		t.Helper()
		code, _, raw := in.send(t, "POST", "/api/users", `{"name": "`+name+`", "role": "`+role+`"}`, bearer("s3cret-admin-token-0123"))
		key, _ := jsonBody(t, raw)["key"].(string)
		if code/100 != 2 || key == "" {
			t.Fatalf("add %s = %d %s", name, code, raw)
		}
		return key
	}
	return in, add("bob", "builder"), add("ann", "user")
}

func bearer(key string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key}
}

// nodeClients returns node, or skips (fails where required) when the
// clients are not installed.
func nodeClients(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(openAIClientDir, "node_modules", "openai", "package.json"))
	}
	if err == nil {
		_, err = os.Stat(filepath.Join(openAIClientDir, "node_modules", "@ai-sdk", "openai-compatible", "package.json"))
	}
	if err != nil {
		msg := "the OpenAI clients are not installed (" + err.Error() + "): run `npm ci --prefix app/testdata/openai-client` at the repository root"
		if os.Getenv("CI") == "true" || os.Getenv("ADAPTBOT_REQUIRE_OPENAI_CLIENTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

// TestOpenAIClients drives the door with the openai package and the
// Vercel AI SDK: a plain answer, a streamed one, the calculator, a build
// agreed in a follow-up (refused for a user, done for a builder, and the
// question then answered), a client's tool called and continued, and bad
// input refused in OpenAI's error shape. Every answer's id finds its trace
// and its usage is the row's.
func TestOpenAIClients(t *testing.T) {
	node := nodeClients(t)
	in, builder, user := openAIServer(t, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "cases.mjs")
	cmd.Dir = openAIClientDir
	cmd.Env = append(os.Environ(), "ADAPTBOT_URL="+in.url, "ADAPTBOT_KEY="+builder, "ADAPTBOT_USER_KEY="+user)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node cases.mjs: %v\n%s\nserver: %s", err, stderr.String(), in.out)
	}
	var got struct {
		Models                                   []string
		Plain, Calculator, Offer, Refused, After completion
		ToolCall, ToolDone                       completion
		Streamed, Built, ToolStreamed            streamed
		Errors                                   map[string]sdkError
		Vercel                                   struct{ Text, Finish string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("node's output: %v\n%s", err, stdout.String())
	}

	if strings.Join(got.Models, ",") != "adaptbot,adaptbot:scripted" {
		t.Errorf("models = %v", got.Models)
	}
	if c := got.Plain; c.text() != "Hello from AdaptBot, a scripted model." || c.Object != "chat.completion" || c.Model != "adaptbot" || c.finish() != "stop" {
		t.Errorf("plain = %+v", c)
	}
	if s := got.Streamed; s.Content != "Hello from AdaptBot, a scripted model." || s.Pieces < 2 || s.Finish != "stop" || s.Usage == nil {
		t.Errorf("streamed = %+v", s)
	}
	if c := got.Calculator; !strings.Contains(c.text(), "42") {
		t.Errorf("calculator = %+v", c)
	}
	if c := got.Offer; !strings.Contains(c.text(), `answer "yes"`) {
		t.Errorf("the offer = %q", c.text())
	}
	if c := got.Refused; !strings.Contains(c.text(), "builder role") || !strings.Contains(c.text(), "Nothing was built") {
		t.Errorf("a user agrees to a build = %q", c.text())
	}
	if s := got.Built; !strings.Contains(s.Content, "Building a tool") || !strings.Contains(s.Content, "Created roman_numerals (version 1)") ||
		!strings.HasSuffix(s.Content, "Here you go: MMXXVI") || s.Finish != "stop" {
		t.Errorf("the agreed build = %q (%s)", s.Content, s.Finish)
	}
	if c := got.After; c.text() != "Here you go: MMXXVI" {
		t.Errorf("the question once the tool serves = %q", c.text())
	}
	tc := got.ToolCall
	if tc.finish() != "tool_calls" || len(tc.Choices[0].Message.ToolCalls) != 1 || tc.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" ||
		tc.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"city": "Paris"}` {
		t.Errorf("the client's tool = %+v", tc.Choices)
	}
	if c := got.ToolDone; c.text() != "Here you go: sunny, 21 C" || c.finish() != "stop" {
		t.Errorf("after the client's result = %+v", c)
	}
	if s := got.ToolStreamed; s.Finish != "tool_calls" || len(s.Calls) != 1 {
		t.Errorf("the client's tool, streamed = %+v", s)
	}
	for name, want := range map[string]sdkError{
		"empty":         {Status: 400, Type: "invalid_request_error", Param: "messages"},
		"role":          {Status: 400, Type: "invalid_request_error", Param: "messages[0].role"},
		"orphan":        {Status: 400, Type: "invalid_request_error", Param: "messages[1].tool_call_id"},
		"emptyStreamed": {Status: 400, Type: "invalid_request_error", Param: "messages"},
		"n":             {Status: 400, Type: "invalid_request_error", Param: "n"},
		"model":         {Status: 404, Type: "not_found_error", Param: "model"},
		"badKey":        {Status: 401, Type: "authentication_error"},
	} {
		e := got.Errors[name]
		if e.Status != want.Status || e.Type != want.Type || e.Param != want.Param || e.Message == "" {
			t.Errorf("%s: %+v, want %+v", name, e, want)
		}
	}
	if v := got.Vercel; v.Text != "Hello from AdaptBot, a scripted model." || v.Finish != "stop" {
		t.Errorf("the Vercel AI SDK = %+v", v)
	}

	// One row per answer, door openai, with the usage the client saw; the
	// id finds the trace.
	rows := map[string]map[string]string{}
	for _, r := range in.rows(t) {
		rows[r["request_id"]] = r
	}
	for name, c := range map[string]completion{"plain": got.Plain, "calculator": got.Calculator, "after": got.After, "toolDone": got.ToolDone} {
		row := rows[c.ID]
		if row == nil || row["door"] != "openai" {
			t.Errorf("%s: row of %s = %v", name, c.ID, row)
			continue
		}
		if strconv.Itoa(c.Usage.PromptTokens) != row["prompt_tokens"] || strconv.Itoa(c.Usage.CompletionTokens) != row["completion_tokens"] ||
			c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens || c.Usage.PromptTokens == 0 {
			t.Errorf("%s: usage %+v, row %s/%s", name, c.Usage, row["prompt_tokens"], row["completion_tokens"])
		}
		code, _, raw := in.send(t, "GET", "/api/requests/"+c.ID, "", bearer(builder))
		if code != 200 || !strings.Contains(string(raw), c.ID) {
			t.Errorf("%s: GET /api/requests/%s = %d %s", name, c.ID, code, raw)
		}
	}
	if row := rows[got.Built.ID]; row == nil || row["intent"] != "BUILD" || row["category"] != "build_create" || row["door"] != "openai" ||
		strconv.Itoa(got.Built.Usage.PromptTokens) != row["prompt_tokens"] {
		t.Errorf("the agreed build's row = %v (usage %+v)", row, got.Built.Usage)
	}
	if row := rows[got.Refused.ID]; row == nil || row["error_kind"] != "forbidden" {
		t.Errorf("the refused build's row = %v", row)
	}
	if row := rows[got.ToolCall.ID]; row == nil || row["category"] != "client_tools" {
		t.Errorf("the client's tool's row = %v", row)
	}
}

// completion is a chat.completion as a client decodes it.
type completion struct {
	ID      string
	Object  string
	Model   string
	Choices []struct {
		Message struct {
			Content   *string
			ToolCalls []struct {
				ID       string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
		FinishReason string `json:"finish_reason"`
	}
	Usage usageCounts
}

type usageCounts struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (c completion) text() string {
	if len(c.Choices) == 0 || c.Choices[0].Message.Content == nil {
		return ""
	}
	return *c.Choices[0].Message.Content
}

func (c completion) finish() string {
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].FinishReason
}

// streamed is what cases.mjs gathers of a streamed answer.
type streamed struct {
	ID      string
	Content string
	Pieces  int
	Calls   []any
	Finish  string
	Usage   *usageCounts
}

// sdkError is an API error as the openai package reports it.
type sdkError struct {
	Status  int
	Type    string
	Param   string
	Code    any
	Message string
}

// TestOpenAIRefusals checks the door's refusals that need no client
// library, in OpenAI's error shape: no key beyond loopback (401), the rate
// limit (429, with Retry-After), and a page of another site (403: CORS
// stays closed unless ADAPTBOT_ALLOWED_ORIGINS lists it).
func TestOpenAIRefusals(t *testing.T) {
	in, builder, _ := openAIServer(t, map[string]string{"ADAPTBOT_RATE_LIMIT": "2/min"})
	body := `{"model": "adaptbot", "messages": [{"role": "user", "content": "hello"}]}`
	shape := func(raw []byte) map[string]any {
		t.Helper()
		e, _ := jsonBody(t, raw)["error"].(map[string]any)
		if e == nil || e["message"] == "" || e["type"] == nil {
			t.Errorf("not OpenAI's error shape: %s", raw)
		}
		for _, k := range []string{"message", "type", "param", "code"} {
			if _, ok := e[k]; !ok {
				t.Errorf("error without %q: %s", k, raw)
			}
		}
		return e
	}
	code, _, raw := in.send(t, "POST", "/v1/chat/completions", body, map[string]string{"Content-Type": "application/json"})
	if e := shape(raw); code != 401 || e["type"] != "authentication_error" {
		t.Errorf("no key = %d %s", code, raw)
	}
	if code, _, raw := in.send(t, "GET", "/v1/models", "", nil); code != 401 {
		t.Errorf("models without a key = %d %s", code, raw)
	}
	cross := bearer(builder)
	cross["Origin"] = "https://evil.example"
	code, h, raw := in.send(t, "POST", "/v1/chat/completions", body, cross)
	if e := shape(raw); code != 403 || e["type"] != "permission_error" || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another site's page = %d %v %s", code, h, raw)
	}
	for i := range 2 {
		if code, _, raw := in.send(t, "POST", "/v1/chat/completions", body, bearer(builder)); code != 200 {
			t.Fatalf("chat %d = %d %s", i, code, raw)
		}
	}
	code, h, raw = in.send(t, "POST", "/v1/chat/completions", body, bearer(builder))
	if e := shape(raw); code != 429 || e["type"] != "rate_limit_error" || e["code"] != "rate_limit_exceeded" || h.Get("Retry-After") == "" {
		t.Errorf("over the rate = %d %v %s", code, h, raw)
	}
	// The two chats, and the refusal over the rate (the others came from
	// nobody, or from another site's page).
	rows := in.requestRows(t)
	if len(rows) != 3 || rows[0]["door"] != "openai" || rows[1]["door"] != "openai" || rows[2]["door"] != "openai" || rows[2]["error_kind"] != "limited" {
		t.Errorf("rows = %v", rows)
	}
}
