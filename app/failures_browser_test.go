package main

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"adaptbot/llm/llmtest"
)

// TestBrowserFeedbackFailuresAndRepair clicks through learning from use as
// a person would: a thumbs-down with a comment under a chat answer (kept
// after a reload); the tool's Failures section with the cases of failed
// runs and the thumbs-down, dismissed with a click; the Repair button; the
// failure cases on the list of tools and the satisfaction on the
// dashboard; every page at 390 px.
func TestBrowserFeedbackFailuresAndRepair(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	var repairs atomic.Int32
	env := modelEnv(llmtest.New(t, repairModel(&repairs)))
	env["ADAPTBOT_AUTO_REPAIR"] = "off"
	in := start(t, env, withFirstWord(t))
	ctx := browse(t, chrome)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	// A thumbs-down with a comment on a chat answer.
	err := chromedp.Do(ctx,
		chromedp.Navigate(in.url),
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.SendKeys(chromedp.ID("message"), "first of hello world"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(`.msg.bot .feedback button.thumb[data-score="-1"]`)),
		chromedp.Click(chromedp.CSS(`.msg.bot .feedback button.thumb[data-score="-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.feedback form input`)),
		chromedp.SendKeys(chromedp.CSS(`.feedback form input`), "greetings are not words"),
		chromedp.Click(chromedp.CSS(`.feedback form button`)),
		chromedp.Poll[chromedp.Void](`(document.querySelector('.feedback .said') || {}).textContent?.includes('greetings are not words')`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatalf("browser: %v\nserver output:\n%s", err, in.out)
	}
	screenshot(t, ctx, "chat-feedback")
	// After a reload the answer still shows its feedback, and offers none.
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`.feedback .said`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.feedback button.thumb').length`)); n != 0 {
		t.Errorf("%d thumbs offered again after a reload", n)
	}
	_, recent := in.do(t, "GET", "/api/requests?limit=10", "")
	var rated string
	for _, r := range recent["requests"].([]any) {
		if m := r.(map[string]any); m["kind"] == "chat" {
			rated = str(m["request_id"])
		}
	}
	if _, tr := in.do(t, "GET", "/api/requests/"+rated, ""); tr["feedback"] == nil {
		t.Errorf("the trace has no feedback: %v", tr)
	}

	// Two failing runs, then the tool's page.
	in.do(t, "POST", "/api/tools/first_word/run", `{"text": ""}`)
	in.do(t, "POST", "/api/tools/first_word/run", `{"text": "!x"}`)
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/tools/first_word"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#failures-table tbody tr').length === 3`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		_, rep := in.do(t, "GET", "/api/tools/first_word/failures", "")
		t.Fatalf("the failures section: %v\nthe API's report: %v", err, rep)
	}
	table, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("failures-table")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"text":""}`, "panic", "no bangs", "feedback", "greetings are not words", "trace", "Confirm", "Dismiss"} {
		if !strings.Contains(table, want) {
			t.Errorf("the failures table lacks %q:\n%s", want, table)
		}
	}
	screenshot(t, ctx, "tool-failures")
	// The thumbs-down was not the tool's fault: dismissed.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#failures-table tr.unconfirmed button:last-child`)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#failures-table tbody tr').length === 2`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		_, rep := in.do(t, "GET", "/api/tools/first_word/failures", "")
		shown, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("repair-out")))
		t.Fatalf("dismiss: %v\nthe page says: %s\nthe API's report: %v", err, shown, rep)
	}
	// Repair: it says what it did; then version 2 serves.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("repair")),
		chromedp.Poll[chromedp.Void](`document.getElementById('repair-out').textContent.includes('Repaired first_word')`, chromedp.WithPollingTimeout(60*time.Second)),
	)
	if err != nil {
		t.Fatalf("repair: %v\nserver output:\n%s", err, in.out)
	}
	out, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("repair-out")))
	if !strings.Contains(out, "a clear error") || !strings.Contains(out, "kept as an example") {
		t.Errorf("the repair's words:\n%s", out)
	}
	screenshot(t, ctx, "tool-repair-done")
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/tools/first_word"),
		chromedp.Poll[chromedp.Void](`document.body.textContent.includes('version 2 serves')`, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#failures-table tr.fixed').length === 2`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatalf("repair: %v\nserver output:\n%s", err, in.out)
	}
	versions, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("versions")))
	if !strings.Contains(versions, "Repair of 2 failure cases") {
		t.Errorf("the versions do not say what the repair fixed:\n%s", versions)
	}
	screenshot(t, ctx, "tool-repaired")
	if repairs.Load() != 1 {
		t.Errorf("%d repairs", repairs.Load())
	}

	// The list of tools and the dashboard.
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/tools"),
		chromedp.Poll[chromedp.Void](`document.querySelector('td[data-failures="first_word"] a') !== null`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatalf("tools page: %v", err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/dashboard"),
		chromedp.Poll[chromedp.Void](`document.body.dataset.loaded === 'true'`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	cards, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("cards")))
	sat, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("chart-satisfaction")))
	if !strings.Contains(cards, "1 down") || !strings.Contains(sat, "first_word") {
		t.Errorf("dashboard: cards %q, satisfaction %q", cards, sat)
	}
	screenshot(t, ctx, "dashboard-feedback")
	fits390(t, ctx, in.url, "/tools/first_word", "/tools", "/dashboard", "/")
}
