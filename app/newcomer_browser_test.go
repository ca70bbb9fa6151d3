package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"adaptbot/llm/llmtest"
)

// TestBrowserDashboardTraceLinkOpensTheTraceView: a request's trace link on
// the dashboard opens the trace as a person reads it (issue 41), the same
// steps the chat shows under the answer's badge, at desktop width and on a
// phone.
func TestBrowserDashboardTraceLinkOpensTheTraceView(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		switch {
		case isClassifier(r):
			return llmtest.Call("calculator", `{"expression": "6*7"}`)
		case isSynthesizer(r):
			return llmtest.Say("6*7 is " + lastOutput(r) + ".")
		}
		return llmtest.Say("I am not sure.")
	})
	in := start(t, modelEnv(llmSrv))
	if code, body := in.do(t, "POST", "/chat", `{"message": "what is 6*7?"}`); code != 200 {
		t.Fatalf("chat = %d %v", code, body)
	}
	for _, width := range []int64{1280, 390} {
		ctx := browse(t, chrome)
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(in.url+"/dashboard"),
			chromedp.Poll[chromedp.Void](`document.body.dataset.loaded === 'true'`, chromedp.WithPollingTimeout(20*time.Second)),
		)
		var href string
		if err == nil {
			href, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#recent a.trace-link').getAttribute('href')`))
		}
		if err == nil {
			// Where the link goes, as a person's click would.
			err = chromedp.Do(ctx,
				chromedp.Navigate(in.url+href),
				chromedp.Poll[chromedp.Void](`document.body.dataset.page === 'request' && document.body.dataset.loaded === 'true'`, chromedp.WithPollingTimeout(20*time.Second)),
			)
		}
		if err != nil {
			t.Fatalf("%d px: %v\nserver output:\n%s", width, err, in.out)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`({
			nodes: [...document.querySelectorAll('#trace td.node')].map(td => td.textContent),
			text: document.getElementById('request').textContent,
			json: document.body.textContent.trim().startsWith('{'),
			scroll: document.documentElement.scrollWidth > document.documentElement.clientWidth,
		})`))
		if err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, fmt.Sprintf("request-%d", width))
		if got["json"] == true {
			t.Errorf("%d px: the trace link opened raw JSON", width)
		}
		nodes := fmt.Sprint(got["nodes"])
		text, _ := got["text"].(string)
		if !strings.Contains(nodes, "classifier") || !strings.Contains(text, "what is 6*7?") || !strings.Contains(text, "6*7 = 42") {
			t.Errorf("%d px: the trace view shows steps %s and text %q", width, nodes, text)
		}
		if got["scroll"] == true {
			t.Errorf("at %d px the request page scrolls sideways", width)
		}
	}
}

// fitReport measures, on the page open in the browser, every placeholder
// against its field's width, and the labels of the dashboard's filters
// against each other: labels of one row must share a baseline.
const fitReport = `(() => {
  const ctx = document.createElement('canvas').getContext('2d');
  const cut = [];
  for (const f of document.querySelectorAll('input[placeholder], textarea[placeholder]')) {
    if (!f.offsetParent) continue;
    const cs = getComputedStyle(f);
    ctx.font = cs.fontStyle + ' ' + cs.fontWeight + ' ' + cs.fontSize + ' ' + cs.fontFamily;
    const room = f.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    if (ctx.measureText(f.placeholder).width > room + 1) cut.push(f.id + ': ' + f.placeholder);
  }
  const rows = {};
  for (const l of document.querySelectorAll('form#filters label')) {
    const r = l.getBoundingClientRect();
    (rows[Math.round(r.bottom)] = rows[Math.round(r.bottom)] || []).push(Math.round(r.top));
  }
  const offBaseline = Object.values(rows).filter(tops => new Set(tops).size > 1).length;
  return {cut, offBaseline};
})()`

// TestBrowserPlaceholdersFitAndLabelsLineUp: at 390 px and at desktop width
// no field's placeholder is cut (issue 41 found "make a tool th"), and the
// dashboard's filter labels sit on one baseline.
func TestBrowserPlaceholdersFitAndLabelsLineUp(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	in := start(t, nil)
	ctx := browse(t, chrome) // one browser for every page: each launch costs seconds
	for _, width := range []int64{1280, 390} {
		for _, path := range []string{"/", "/tools", "/dashboard", "/tools/calculator"} {
			err := chromedp.Do(ctx,
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(in.url+path),
				chromedp.WaitReady("body"),
			)
			if err != nil {
				t.Fatalf("%s at %d px: %v", path, width, err)
			}
			got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
				Cut         []string `json:"cut"`
				OffBaseline int      `json:"offBaseline"`
			}](fitReport))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Cut) > 0 {
				t.Errorf("%s at %d px: placeholders cut: %q", path, width, got.Cut)
			}
			if got.OffBaseline > 0 {
				t.Errorf("%s at %d px: %d rows of filter labels do not share a baseline", path, width, got.OffBaseline)
			}
		}
	}
}
