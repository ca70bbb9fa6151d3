package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"adaptbot/llm/llmtest"
)

// romanTool is what the scripted model writes when asked for the tool.
const romanTool = `// Package roman_numerals writes a whole number in Roman numerals.
package roman_numerals

import (
	"context"
	"fmt"
	"strings"
)

// Input holds the number.
type Input struct {
	Number int ` + "`json:\"number\" jsonschema:\"a whole number from 1 to 3999\"`" + `
}

// Execute converts the number.
func Execute(ctx context.Context, in Input) (string, error) {
	if in.Number < 1 || in.Number > 3999 {
		return "", fmt.Errorf("%d is out of range: Roman numerals go from 1 to 3999", in.Number)
	}
	values := []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
	symbols := []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}
	var b strings.Builder
	n := in.Number
	for i, v := range values {
		for n >= v {
			b.WriteString(symbols[i])
			n -= v
		}
	}
	return b.String(), nil
}
`

// browserPath finds Chromium, or skips the test unless CI requires it.
func browserPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("ADAPTBOT_REQUIRE_BROWSER") == "1" || os.Getenv("CI") == "true" {
		t.Fatal("Chromium is required (CI=true or ADAPTBOT_REQUIRE_BROWSER=1) but not installed: apt-get install chromium")
	}
	t.Skip("Chromium is not installed (apt-get install chromium); .ci/run installs it")
	return ""
}

// TestBrowserCreateToolFlow clicks through the page as a person would: a
// question no tool can answer, Create Tool, live progress, then the answer
// from the tool that did not exist a moment before.
func TestBrowserCreateToolFlow(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	writeToolArgs, _ := json.Marshal(map[string]any{
		"source":      "Here is the tool:\n```go\n" + romanTool + "```\nIt handles 1 to 3999.",
		"description": "Writes a whole number in Roman numerals.",
		"category":    "text",
		"examples": []map[string]any{
			{"input": map[string]any{"number": 12}, "contains": "XII"},
			{"input": map[string]any{"number": 1994}, "matches": "^MCMXCIV$"},
		},
	})
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		switch {
		case isClassifier(r):
			if r.Schema("roman_numerals") != nil {
				return llmtest.Call("roman_numerals", `{"number": 12}`)
			}
			return llmtest.Call("need_tool", `{}`)
		case isSynthesizer(r):
			return llmtest.Say("12 in Roman numerals is " + lastOutput(r) + ".")
		}
		switch f := r.Forced(); f {
		case "decide_build": // the Create Tool button asks for the plan first
			// Like many a model, this one fills in what the schema requires.
			var schema struct{ Required []string }
			json.Unmarshal(r.Schema(f), &schema)
			if slices.Contains(schema.Required, "inputs") {
				return llmtest.Call(f, `{"op":"CREATE","tool":"roman_numerals","summary":"Convert a whole number to Roman numerals.","inputs":["number (integer)"]}`)
			}
			return llmtest.Call(f, `{"op":"CREATE","tool":"roman_numerals","summary":"Convert a whole number to Roman numerals."}`)
		case "write_tool":
			return llmtest.Call(f, string(writeToolArgs))
		}
		return llmtest.Say("I am not sure.")
	})
	in := start(t, modelEnv(llmSrv))
	ctx := browse(t, chrome)

	err := chromedp.Do(ctx,
		chromedp.Navigate(in.url),
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.SendKeys(chromedp.ID("message"), "convert 12 to roman numerals"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.ID("create-tool")),
		chromedp.Click(chromedp.ID("create-tool")),
		// The plan, with the inputs, shows before the build starts.
		chromedp.Poll[chromedp.Void](`document.querySelector('#progress li.planned') !== null`, chromedp.WithPollingTimeout(30*time.Second)),
		// Once the tool is registered the page asks the question again; wait
		// for that answer.
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('.msg.bot')].some(m => m.textContent.includes('is XII'))`, chromedp.WithPollingTimeout(60*time.Second)),
	)
	if err != nil {
		t.Fatalf("browser: %v\nserver output:\n%s", err, in.out)
	}
	progress, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("progress")))
	if err != nil {
		t.Fatal(err)
	}
	// The offer is used once: its buttons go (issue 41), and the first
	// answer's badge says in words that no tool fit.
	page, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`({
		buttons: document.querySelectorAll('#create-tool, #cancel-tool').length,
		planned: document.querySelector('#progress li.planned').textContent,
		badges: [...document.querySelectorAll('.msg.bot .badge.path')].map(b => b.textContent),
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if page["buttons"] != float64(0) {
		t.Errorf("%v build offer buttons stay on the page after Create Tool", page["buttons"])
	}
	if planned, _ := page["planned"].(string); !strings.Contains(planned, "Inputs: number (integer)") {
		t.Errorf("the plan shown before the build = %q, want its inputs", planned)
	}
	if badges := fmt.Sprint(page["badges"]); badges != "[no tool fits roman_numerals]" {
		t.Errorf("path badges = %s, want people's words, then the tool", badges)
	}
	if n := strings.Count(strings.ToLower(progress), "working out what to build"); n != 1 {
		t.Errorf("progress says %d times that it is working out what to build, want once:\n%s", n, progress)
	}
	answer, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('.msg.bot')].pop().textContent`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("ADAPTBOT_SCREENSHOT_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "create-tool-flow.png"), shot, 0o644)
	}
	for _, want := range []string{"compil", "example 1 of 2", "example 2 of 2", "roman_numerals"} {
		if !strings.Contains(strings.ToLower(progress), strings.ToLower(want)) {
			t.Errorf("progress does not show %q:\n%s", want, progress)
		}
	}
	if !strings.Contains(answer, "12 in Roman numerals is XII") || !strings.Contains(answer, "roman_numerals") {
		t.Errorf("final answer = %q", answer)
	}
	code, r := in.do(t, "GET", "/api/tools/roman_numerals", "")
	if code != 200 || r["origin"] != "generated" || r["version"] != float64(1) {
		t.Errorf("registered tool = %d %v", code, r)
	}
	rows := in.rows(t)
	var cats []string
	for _, row := range rows {
		cats = append(cats, row["category"])
	}
	if got := strings.Join(cats, ","); got != "need_tool,build_plan,build_create,roman_numerals" {
		t.Errorf("CSV categories = %s", got)
	}
	for _, row := range rows {
		if row["category"] == "build_create" && (row["intent"] != "BUILD" || row["build_attempts"] != "1" || row["tool_generation_time_sec"] == "") {
			t.Errorf("build row = %v", row)
		}
	}
}

// browse starts a headless Chromium for the test and returns its context,
// bounded to 90 s.
//
// The browser tests run in parallel with one another (t.Parallel): each has
// its own server, folder and browser, and spends most of its time waiting
// on Chromium, so two at a time shorten the app package's run by a minute.
func browse(t *testing.T, chrome string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTimeout)

	return ctx
}

// TestBrowserChatBuild asks for a tool in the chat box and checks that the
// build's steps show as they happen and the tool count goes up.
func TestBrowserChatBuild(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	in := start(t, modelEnv(llmtest.New(t, romanScript(t))))
	ctx := browse(t, chrome)
	var before string
	err := chromedp.Do(ctx,
		chromedp.Navigate(in.url),
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.Poll[chromedp.Void](`document.getElementById('tool-count').textContent !== ''`, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if err == nil {
		before, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("tool-count")))
	}
	if err == nil {
		err = chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.ID("message"), "make a tool that converts numbers to roman numerals"),
			chromedp.Click(chromedp.ID("send")),
			chromedp.Poll[chromedp.Void](`document.getElementById('tool-count').textContent !== '`+before+`'`, chromedp.WithPollingTimeout(60*time.Second)),
		)
	}
	if err != nil {
		t.Fatalf("browser: %v\nserver output:\n%s", err, in.out)
	}
	progress, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("progress")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"compil", "example 1 of 2", "roman_numerals"} {
		if !strings.Contains(strings.ToLower(progress), want) {
			t.Errorf("chat build progress does not show %q:\n%s", want, progress)
		}
	}
	after, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("tool-count")))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := strconv.Atoi(before); after != strconv.Itoa(b+1) {
		t.Errorf("tool count %s → %s", before, after)
	}
}
