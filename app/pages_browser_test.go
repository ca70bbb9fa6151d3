package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"adaptbot/llm/llmtest"
)

// TestBrowserPathBadgeNamesEveryTool: an answer that used two tools names
// both on its path badge, in the order they ran.
func TestBrowserPathBadgeNamesEveryTool(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	const twoTools = "convert 5 miles to km, then multiply by 3"
	script := newScript(map[string]string{twoTools: "unit_converter"}, map[string]string{twoTools: `{"value": 5, "from": "miles", "to": "km"}`})
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		// The first synthesizer call runs the calculator on the converter's
		// result; the second answers.
		if isSynthesizer(r) && !strings.Contains(r.LastUser(), "Tool: calculator") {
			nums := regexp.MustCompile(`[0-9]+\.[0-9]+`).FindAllString(lastOutput(r), -1)
			return llmtest.Call("calculator", fmt.Sprintf(`{"expression": "%s * 3"}`, nums[len(nums)-1]))
		}
		return script.reply(r)
	})
	in := start(t, modelEnv(llmSrv))
	ctx := browse(t, chrome)
	err := chromedp.Do(ctx,
		chromedp.Navigate(in.url),
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.SendKeys(chromedp.ID("message"), twoTools),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](`document.querySelector('.msg.bot .badge.path') !== null`, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		t.Fatalf("browser: %v\nserver output:\n%s", err, in.out)
	}
	badge, err := chromedp.Run(ctx, chromedp.Text(`.msg.bot .badge.path`))
	if err != nil {
		t.Fatal(err)
	}
	if badge != "unit_converter → calculator" {
		t.Errorf("path badge = %q, want both tools in order", badge)
	}
}
