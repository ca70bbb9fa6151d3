package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// TestBrowserSecretsAndApprovals clicks through the pages of tools that
// act as a person would: set a secret on the secrets page (a password
// field; the page never shows the value again), trust a host on the tool
// page, then chat with a tool that posts to a webhook: the approval card
// shows the tool, version, method, URL and body (the secret as its
// placeholder); Allow sends it once and the card says so. On the tool
// page, a run's card denied sends nothing. Screenshots at 1280 and 390 px
// with ADAPTBOT_SCREENSHOT_DIR.
func TestBrowserSecretsAndApprovals(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	h := startHook(t)
	const canary = "browser-canary-9d2f61"
	script := newScript(map[string]string{"post deploy done": "post_hook"}, map[string]string{"post deploy done": `{"text":"deploy done"}`})
	env := modelEnv(llmtest.New(t, script.reply))
	in := startWith(t, env, actHooks(h.roots), func(dir string) {
		writeTool(t, dir, "post_hook", postHook(h.port()))
	})
	poll.Until(t, "post_hook serves", func() bool {
		code, _ := in.do(t, "GET", "/api/tools/post_hook", "")
		return code == 200
	})
	ctx := browse(t, chrome)
	wait := chromedp.WithPollingTimeout(30 * time.Second)

	// The secrets page: set HOOK with the form.
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(in.url+"/secrets"),
		chromedp.WaitVisible(chromedp.ID("secret-form")),
		chromedp.SendKeys(chromedp.ID("secret-name"), "HOOK"),
		chromedp.SendKeys(chromedp.ID("secret-hosts"), hookHost),
		chromedp.SendKeys(chromedp.ID("secret-value"), canary),
		chromedp.Click(chromedp.ID("secret-save")),
		chromedp.Poll[chromedp.Void](`document.querySelector('#secrets tr[data-secret="HOOK"]') !== null`, wait),
	)
	if err != nil {
		t.Fatal(err)
	}
	listed := text(t, ctx, "#secrets")
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML + [...document.querySelectorAll('input')].map(i => i.value).join(' ')`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(listed, "HOOK") || !strings.Contains(listed, hookHost) || !strings.Contains(listed, "personal") || !strings.Contains(listed, "never") {
		t.Errorf("the secrets listed = %q", listed)
	}
	if strings.Contains(page, canary) {
		t.Error("the secrets page holds the value after saving it")
	}
	screenshot(t, ctx, "secrets-1280")

	// The tool page shows its host, asking first.
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/tools/post_hook"),
		chromedp.WaitVisible(chromedp.ID("hosts")),
	)
	if err != nil {
		t.Fatal(err)
	}
	hosts := text(t, ctx, "#hosts")
	if !strings.Contains(hosts, hookHost) || !strings.Contains(hosts, "asks first") || !strings.Contains(hosts, "Trust version 1") {
		t.Errorf("the tool page's hosts = %q", hosts)
	}
	screenshot(t, ctx, "tool-hosts-1280")

	// A run from the tool page waits for its card; Deny sends nothing.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#f-text`), "from the run form"),
		chromedp.Click(chromedp.ID("run")),
		chromedp.WaitVisible(chromedp.CSS(`#run-out .approval button.deny`)),
		chromedp.Click(chromedp.CSS(`#run-out .approval button.deny`)),
		chromedp.Poll[chromedp.Void](`document.querySelector('#run-out .approval.settled') !== null && document.querySelector('#run-out pre.out') !== null`, wait),
	)
	if err != nil {
		t.Fatal(err)
	}
	runOut := text(t, ctx, "#run-out")
	if !strings.Contains(runOut, "Denied") || !strings.Contains(runOut, "nothing was sent") || len(h.requests()) != 0 {
		t.Errorf("a denied run: %q; the webhook got %v", runOut, h.requests())
	}

	// The chat: the card, Allow, one POST, the card says so.
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url),
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.SendKeys(chromedp.ID("message"), "post deploy done"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(`#log .approval button.allow`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	card := text(t, ctx, "#log .approval")
	for _, want := range []string{"post_hook", "version 1", "POST", "https://" + hookHost + ":" + h.port() + "/services/{{secret:HOOK}}", `{"text":"deploy done"}`, "Allow for the rest of this chat", "Deny"} {
		if !strings.Contains(card, want) {
			t.Errorf("the approval card lacks %q: %q", want, card)
		}
	}
	screenshot(t, ctx, "chat-approval-1280")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "chat-approval-390")
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#log .approval button.allow`)),
		chromedp.Poll[chromedp.Void](`document.querySelector('#log .msg.bot:not(.pending) .info') !== null`, wait),
	)
	if err != nil {
		t.Fatal(err)
	}
	answer := text(t, ctx, "#log")
	got := h.requests()
	if len(got) != 1 || got[0].Path != "/services/"+canary || !strings.Contains(answer, "Allowed") || !strings.Contains(answer, "[secret:HOOK]") || strings.Contains(answer, canary) {
		t.Errorf("after Allow: the webhook got %v; the page says %q", got, answer)
	}
	screenshot(t, ctx, "chat-allowed-390")
	fits390(t, ctx, in.url, "/secrets", "/tools/post_hook")
	if err := chromedp.Do(ctx, chromedp.Navigate(in.url+"/secrets"), chromedp.WaitVisible(chromedp.CSS(`#secrets tr[data-secret="HOOK"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "secrets-390")

	// An admin (the local user) trusts the host on the tool page.
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(in.url+"/tools/post_hook"),
		chromedp.WaitVisible(chromedp.CSS(`#hosts button.trust`)),
		chromedp.Click(chromedp.CSS(`#hosts button.trust`)),
		chromedp.WaitVisible(chromedp.CSS(`#trust-out pre.okay`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The page reloads itself once trusted; load it afresh (a navigation
	// ends the old page's timers).
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/tools/post_hook"),
		chromedp.WaitVisible(chromedp.CSS(`#hosts .badge.ok`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	hosts = text(t, ctx, "#hosts")
	if !strings.Contains(hosts, "trusted") || !strings.Contains(hosts, "Ask again") {
		t.Errorf("after trusting: %q", hosts)
	}
	screenshot(t, ctx, "tool-trusted-1280")
}

// text is the text of the first element that matches the CSS selector sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).innerText || ''`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
