package newcomer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"adaptbot/llm/llmtest"
)

// TestStartAsDocumented follows the README in a fresh copy of the
// repository, started there with the README's defaults: its curl examples
// without a model and with one, the first tool in five minutes (ask,
// Create Tool, the new tool answers, an edit serves at once), and a
// compute-heavy tool dropped in, which reaches the native tier.
func TestStartAsDocumented(t *testing.T) {
	bin := adaptbotBinary(t, goCommand(t))
	home := freshCopy(t)
	walkReadme(t, bin, home, home, nil)
	keepNativeCache(t, home)
}

// TestStartFromASubfolder is the same walk, started in a subfolder of the
// copy with ADAPTBOT_HOME=.. (relative): everything lands in the copy,
// nothing in the subfolder.
func TestStartFromASubfolder(t *testing.T) {
	bin := adaptbotBinary(t, goCommand(t))
	home := freshCopy(t)
	seedNativeCache(t, home)
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	walkReadme(t, bin, home, work, map[string]string{"ADAPTBOT_HOME": ".."})
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the server wrote in its working folder, not in ADAPTBOT_HOME: %v", names)
	}
}

// walkReadme starts bin in dir (home is the repository copy it serves) and
// does what the README says, checking each answer against the README's
// own text.
func walkReadme(t *testing.T, bin, home, dir string, env map[string]string) {
	readme, err := os.ReadFile(filepath.Join(home, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	curls := readmeCurls(string(readme))
	run, chat := curls.find(t, "/api/tools/calculator/run"), curls.find(t, "/chat")

	// Without a model: the tools API works, and chat says how to turn it on.
	p := launch(t, bin, dir, env)
	out := p.out.String()
	if !strings.Contains(out, "model: none configured") || !strings.Contains(out, "OPENAI_API_KEY") {
		t.Errorf("the start-up message does not say that no model is set and how to set one:\n%s", out)
	}
	if strings.HasSuffix(p.url, ":3000") {
		checkStartMessage(t, string(readme), out)
	}
	code, got, raw := p.send(t, "POST", run.path, run.body)
	if code != 200 {
		t.Fatalf("the README's run: %d %s", code, raw)
	}
	checkShown(t, "the README's run", run.comments[0], got)
	code, _, raw = p.send(t, "POST", chat.path, chat.body)
	if want := chat.said(t, "without one:"); code != want || !strings.Contains(string(raw), "OPENAI_API_KEY") {
		t.Errorf("the README's chat without a model: %d %s; want %d and the setting that turns chat on", code, raw, want)
	}
	p.stop(t)

	// With a model.
	model := llmtest.New(t, readmeScript)
	withModel := map[string]string{"OPENAI_BASE_URL": model.BaseURL(), "OPENAI_API_KEY": "test", "ADAPTBOT_MODEL": "scripted"}
	for k, v := range env {
		withModel[k] = v
	}
	p = launch(t, bin, dir, withModel)
	if !strings.Contains(p.out.String(), "model: openai/scripted") {
		t.Errorf("the start-up message does not name the model:\n%s", p.out)
	}
	before := len(model.Requests())
	code, got, raw = p.send(t, "POST", chat.path, chat.body)
	if code != 200 {
		t.Fatalf("the README's chat: %d %s", code, raw)
	}
	checkShown(t, "the README's chat", strings.TrimPrefix(chat.comments[0], "with a model: "), got)
	var uncached int
	prev := ""
	for _, r := range model.Requests()[before:] {
		uncached += llmtest.Uncached(prev, r.Prompt())
		prev = r.Prompt()
	}
	t.Logf("the README's chat at %d tools: %d prompt tokens a cache cannot serve", 5, uncached)

	// A first tool in five minutes: ask, Create Tool, and the tool answers.
	question := readmeQuestion(t, string(readme))
	code, got, raw = p.send(t, "POST", "/chat", oneField("message", question))
	if code != 200 || got["path"] != "need_tool" {
		t.Fatalf("the first tool's question: %d %s; want the answer that no tool fits", code, raw)
	}
	code, plan, raw := p.send(t, "POST", "/api/tools/plan", oneField("request", question))
	// "The bot says what it will build (a name, what it does, its inputs)".
	if code != 200 || plan["tool"] != "count_vowels" || str(plan["summary"]) == "" || str(plan["inputs"]) != `["text (string)"]` {
		t.Fatalf("the plan of Create Tool: %d %s; want its name, what it does and its inputs", code, raw)
	}
	build, _ := json.Marshal(map[string]any{"request": question, "op": plan["op"], "tool": plan["tool"]})
	evs := p.events(t, "/api/tools/build", string(build))
	if last := evs[len(evs)-1]; !strings.HasPrefix(last, "result ") || !strings.Contains(last, `"ok":true`) {
		t.Fatalf("Create Tool's build: %v", evs)
	}
	code, got, raw = p.send(t, "POST", "/chat", oneField("message", question))
	if code != 200 || str(got["tools"]) != `["count_vowels"]` || !strings.Contains(str(got["response"]), "7 vowels") {
		t.Fatalf("the question asked again: %d %s; want count_vowels's answer, 7 vowels", code, raw)
	}
	// "The badge under the answer opens its trace" (GET /api/requests/<id>).
	if code, trace, raw := p.send(t, "GET", "/api/requests/"+str(got["request_id"]), ""); code != 200 || trace == nil {
		t.Errorf("the answer's trace: %d %s", code, raw)
	}
	vowels := curls.find(t, "/chat", "vowels")
	if code, got, raw = p.send(t, "POST", vowels.path, vowels.body); code != 200 || !strings.Contains(str(got["response"]), "2 vowels") {
		t.Errorf("the README's vowel curl: %d %s", code, raw)
	}
	// Edit tools/<name>/<name>.go: the server picks the change up at once.
	src := filepath.Join(home, "tools", "count_vowels", "count_vowels.go")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("the new tool is not in tools/<name>/<name>.go: %v", err)
	}
	replaceFile(t, src, strings.Replace(string(b), `"%d vowels"`, `"%d vowels (a, e, i, o, u)"`, 1))
	waitFor(t, "the edited tool to serve", 30*time.Second, func() bool {
		_, got, _ := p.send(t, "POST", "/api/tools/count_vowels/run", `{"text":"hello"}`)
		return got["output"] == "2 vowels (a, e, i, o, u)"
	})

	// A compute-heavy tool dropped in reaches the native tier, and the row
	// of a call says so.
	fib, err := os.ReadFile("../../native/testdata/fib/fib.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "tools", "fib"), 0o755); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, filepath.Join(home, "tools", "fib", "fib.go"), string(fib))
	waitFor(t, "the dropped tool to serve", 30*time.Second, func() bool {
		code, _, _ := p.send(t, "POST", "/api/tools/fib/run", `{"n":20}`)
		return code == 200
	})
	var tier map[string]any
	took := waitFor(t, "fib to serve natively", 4*time.Minute, func() bool {
		_, got, _ := p.send(t, "GET", "/api/tools/fib", "")
		tier, _ = got["tier"].(map[string]any)
		if s := str(tier["state"]); s == "failed" || s == "refused" || s == "differs" {
			t.Fatalf("fib does not serve natively: %v\nstderr:\n%s", tier, p.err)
		}
		return tier["state"] == "native"
	})
	t.Logf("fib served natively %v after its first call", took.Round(time.Millisecond))
	if code, got, raw = p.send(t, "POST", "/api/tools/fib/run", `{"n":27}`); code != 200 || got["output"] != `{"fib":196418}` {
		t.Fatalf("fib(27) natively: %d %s", code, raw)
	}
	rows := csvRows(t, filepath.Join(home, "benchmarks", "benchmarks.csv"))
	if last := rows[len(rows)-1]; last["category"] != "fib" || last["tier"] != "native" {
		t.Errorf("the last row of benchmarks/benchmarks.csv: %v, want fib's call, tier native", last)
	}
	p.stop(t)
}

// checkStartMessage checks what the README shows the server print when it
// starts without a model against what it printed: its "model:" and
// "ready:" lines, up to a "…".
func checkStartMessage(t *testing.T, readme, printed string) {
	t.Helper()
	for _, prefix := range []string{"model: ", "ready: "} {
		shown := regexp.MustCompile(`(?m)^` + prefix + `.*$`).FindString(readme)
		shown, _, _ = strings.Cut(shown, "…")
		if shown == "" {
			t.Errorf("the README does not show the server's %q line", prefix)
			continue
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(shown)).MatchString(printed) {
			t.Errorf("the README shows %q, the server printed:\n%s", shown, printed)
		}
	}
}

// replaceFile writes a file as editors do: a new file renamed over it.
func replaceFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func oneField(key, value string) string {
	b, _ := json.Marshal(map[string]string{key: value})
	return string(b)
}

// readmeCurl is one of the README's curl examples: the request, and the
// comment lines under it that say what it answers.
type readmeCurl struct {
	body, path string
	comments   []string
}

type curlExamples []readmeCurl

var (
	curlData = regexp.MustCompile(`-d '([^']*)'`)
	curlURL  = regexp.MustCompile(`http://127\.0\.0\.1:3000(/\S*)`)
)

// readmeCurls reads the README's curl examples.
func readmeCurls(readme string) curlExamples {
	var out curlExamples
	lines := strings.Split(readme, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		d, u := curlData.FindStringSubmatch(line), curlURL.FindStringSubmatch(line)
		if d == nil || u == nil {
			continue
		}
		c := readmeCurl{body: d[1], path: u[1]}
		for _, next := range lines[i+1:] {
			if !strings.HasPrefix(next, "# ") {
				break
			}
			c.comments = append(c.comments, strings.TrimPrefix(next, "# "))
		}
		out = append(out, c)
	}
	return out
}

// find is the first example sent to path whose body holds each of words.
func (cs curlExamples) find(t *testing.T, path string, words ...string) readmeCurl {
	t.Helper()
next:
	for _, c := range cs {
		if c.path != path {
			continue
		}
		for _, w := range words {
			if !strings.Contains(c.body, w) {
				continue next
			}
		}
		return c
	}
	t.Fatalf("the README has no curl example of %s with %v", path, words)
	return readmeCurl{}
}

// said is the status a comment beginning with prefix gives.
func (c readmeCurl) said(t *testing.T, prefix string) int {
	t.Helper()
	for _, line := range c.comments {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			var code int
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d", &code); err == nil {
				return code
			}
		}
	}
	t.Fatalf("the README's %s example says nothing beginning %q", c.path, prefix)
	return 0
}

// shownPair is a "key":value the README shows in an answer: a string, an
// array without "…", or a number.
var shownPair = regexp.MustCompile(`"(\w+)":\s*("(?:[^"\\]|\\.)*"|\[[^\]…]*\]|-?\d+(?:\.\d+)?)`)

// checkShown checks an answer against the README's text of it: each value
// shown, but the duration (a number) and the request ID (16 hex digits),
// which vary; and, when the README shows the whole answer (no "…"), no
// other field.
func checkShown(t *testing.T, what, shown string, got map[string]any) {
	t.Helper()
	keys := map[string]bool{}
	for _, m := range shownPair.FindAllStringSubmatch(shown, -1) {
		key := m[1]
		keys[key] = true
		var want any
		if err := json.Unmarshal([]byte(m[2]), &want); err != nil {
			t.Fatalf("%s: the README's %s is not JSON: %s", what, key, m[2])
		}
		switch key {
		case "ms":
			if _, ok := got[key].(float64); !ok {
				t.Errorf("%s: ms is %v, want a number", what, got[key])
			}
		case "request_id":
			if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(str(got[key])) {
				t.Errorf("%s: request_id is %v, want 16 hex digits", what, got[key])
			}
		default:
			if !reflect.DeepEqual(got[key], want) {
				t.Errorf("%s: %s is %s, the README shows %s", what, key, str(got[key]), m[2])
			}
		}
	}
	if len(keys) == 0 {
		t.Fatalf("%s: the README shows no field: %s", what, shown)
	}
	if !strings.Contains(shown, "…") {
		for k := range got {
			if !keys[k] {
				t.Errorf("%s: the answer has %s, which the README does not show: %s", what, k, shown)
			}
		}
	}
}

// readmeQuestion is the question of "A first tool in five minutes".
func readmeQuestion(t *testing.T, readme string) string {
	t.Helper()
	m := regexp.MustCompile(`Ask for something no shipped tool does: \*"([^"]+)"\*`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal(`the README's first tool no longer asks "for something no shipped tool does"; change this test with it`)
	}
	return m[1]
}

// vowelTool is the tool the scripted model writes for the README's first
// tool.
const vowelTool = `// Package count_vowels counts the vowels (a, e, i, o, u) of a text.
package count_vowels

import (
	"context"
	"fmt"
	"strings"
)

// Input is the text.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the text whose vowels to count\"`" + `
}

// Execute counts the vowels.
func Execute(ctx context.Context, in Input) (string, error) {
	n := 0
	for _, r := range strings.ToLower(in.Text) {
		if strings.ContainsRune("aeiou", r) {
			n++
		}
	}
	return fmt.Sprintf("%d vowels", n), nil
}
`

// readmeScript is a model that does what the README says a model does:
// the calculator for arithmetic (its output is the answer), "no tool fits"
// for vowels until a tool counts them, and that tool when Create Tool asks.
func readmeScript(r llmtest.Request) llmtest.Reply {
	switch f := r.Forced(); f {
	case "decide_build":
		return llmtest.Call(f, `{"op":"CREATE","tool":"count_vowels","summary":"Counts the vowels of a text.","inputs":["text (string)"]}`)
	case "write_tool":
		args, _ := json.Marshal(map[string]any{"source": vowelTool, "description": "Counts the vowels (a, e, i, o, u) of a text.", "category": "text",
			"examples": []map[string]any{{"input": map[string]any{"text": "hello"}, "contains": "2 vowels"}, {"input": map[string]any{"text": "sky"}, "contains": "0 vowels"}}})
		return llmtest.Call(f, string(args))
	}
	if isSynthesizer(r) {
		return llmtest.Say("The tool says: " + lastOutput(r))
	}
	if !isClassifier(r) {
		return llmtest.Say("ok")
	}
	msg := ""
	for _, m := range r.Messages {
		if m.Role == "user" {
			msg = m.Text()
		}
	}
	switch {
	case strings.Contains(msg, "2+3*4") && r.Schema("calculator") != nil:
		return llmtest.Call("calculator", `{"expression":"2+3*4","output_is_answer":true}`)
	case strings.Contains(msg, "vowels") && r.Schema("count_vowels") != nil:
		text := msg[strings.LastIndex(msg, " ")+1:]
		if i, j := strings.Index(msg, "'"), strings.LastIndex(msg, "'"); i >= 0 && j > i {
			text = msg[i+1 : j]
		}
		args, _ := json.Marshal(map[string]any{"text": text, "output_is_answer": true})
		return llmtest.Call("count_vowels", string(args))
	case strings.Contains(msg, "vowels"):
		return llmtest.Call("need_tool", `{"capability":"counting the vowels of a text"}`)
	}
	return llmtest.Say("Hello! I am a scripted model.")
}

// The kinds of request the chat sends a model: the synthesizer's ends with
// a tool's result (not request_tools'); the classifier's is any other that
// offers need_tool and forces nothing.
func isSynthesizer(r llmtest.Request) bool {
	res := r.Results()
	return r.Forced() == "" && r.Last().Role == "tool" && len(res) > 0 && res[len(res)-1].Name != "request_tools"
}

func isClassifier(r llmtest.Request) bool {
	return r.Schema("need_tool") != nil && r.Forced() == "" && !isSynthesizer(r)
}

// lastOutput is the last tool output a synthesizer request shows.
func lastOutput(r llmtest.Request) string {
	res := r.Results()
	if len(res) == 0 {
		return ""
	}
	return strings.TrimSpace(res[len(res)-1].Text)
}
