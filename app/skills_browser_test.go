package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// TestBrowserToolsPageListsProposedSkills: the tools page lists a skill
// proposed from traffic, with its chain, its status and the chats it came
// from, linked to their traces.
func TestBrowserToolsPageListsProposedSkills(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	in := start(t, modelEnv(llmtest.New(t, chainModel)))
	for _, a := range [][2]string{{"5", "3"}, {"10", "2"}, {"7", "4"}} {
		if code, r := in.do(t, "POST", "/chat", fmt.Sprintf(`{"message": "convert %s miles to km, then multiply by %s"}`, a[0], a[1])); code != 200 {
			t.Fatalf("chat: %d %v", code, r)
		}
	}
	poll.Until(t, "a proposed skill", func() bool {
		_, r := in.do(t, "GET", "/api/skills", "")
		s, _ := r["skills"].([]any)
		return len(s) == 1 && s[0].(map[string]any)["status"] == "proposed"
	})
	ctx := browse(t, chrome)
	for _, width := range []int64{1280, 390} {
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(in.url+"/tools"),
			chromedp.Poll[chromedp.Void](`!document.getElementById('skills').hidden`, chromedp.WithPollingTimeout(20*time.Second)),
		)
		if err != nil {
			t.Fatalf("the skills section at %d px: %v", width, err)
		}
		text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("skills")))
		for _, want := range []string{"unit_converter → calculator", skillName, "proposed"} {
			if !strings.Contains(text, want) {
				t.Errorf("the skills section at %d px lacks %q:\n%s", width, want, text)
			}
		}
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#skills a[href^="/api/requests/"]').length`)); n != 3 {
			t.Errorf("%d links to the chats the skill came from, want 3", n)
		}
		if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); wide {
			t.Errorf("the tools page scrolls sideways at %d px", width)
		}
		screenshot(t, ctx, fmt.Sprintf("tools-skills-%d", width))
	}
}
