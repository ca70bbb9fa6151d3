package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"adaptbot/llm/llmtest"
)

// TestBrowserSignsInAndChats is a colleague's first minute on a team
// server: the page sends them to sign in, they paste the key an admin made
// for them, and they chat; the header says who they are, and the CSV row
// of their chat carries their pseudonym, never their name or key.
func TestBrowserSignsInAndChats(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return llmtest.Say("Hello, Dana. How can I help?") })
	env := modelEnv(llmSrv)
	env["ADAPTBOT_ADDR"] = "0.0.0.0:0"
	env["ADAPTBOT_ADMIN_TOKEN"] = "s3cret-admin-token"
	in := start(t, env)
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	admin := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"}
	code, _, raw := in.send(t, "POST", "/api/users", `{"name": "dana", "role": "user"}`, admin)
	added := jsonBody(t, raw)
	key, _ := added["key"].(string)
	user, _ := added["user"].(map[string]any)
	if code/100 != 2 || key == "" {
		t.Fatalf("add dana = %d %s", code, raw)
	}

	ctx := browse(t, chrome)
	err := chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/"),
		chromedp.WaitVisible(chromedp.ID("key")), // not signed in: the sign-in page
		chromedp.SendKeys(chromedp.ID("key"), key),
		chromedp.Click(chromedp.ID("sign-in-key")),
		chromedp.WaitVisible(chromedp.ID("message")), // back on the chat page
		chromedp.Poll[chromedp.Void](`document.querySelector('header.top').textContent.includes('dana')`, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.SendKeys(chromedp.ID("message"), "hello"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('.msg.bot')].some(m => m.textContent.includes('Hello, Dana'))`, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		t.Fatalf("browser: %v\nserver output:\n%s", err, in.out)
	}
	who, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('header.top').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	answer, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('.msg.bot')].pop().textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(who, "dana") || !strings.Contains(answer, "How can I help") {
		t.Errorf("header %q, answer %q", who, answer)
	}
	rows := in.requestRows(t)
	if len(rows) != 1 || rows[0]["intent"] != "CHAT" || rows[0]["user"] == "" || rows[0]["user"] != str(user["pseudonym"]) ||
		strings.Contains(rows[0]["user"], "dana") || strings.Contains(rows[0]["user"], key) {
		t.Errorf("rows = %v; want one chat row with dana's pseudonym %v", rows, user["pseudonym"])
	}
}
