package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserFailuresOfOthersAreWithheld: a user who opens a tool's page
// sees the ways it failed for someone else (the kind, the error, the
// count), with that person's input replaced by a word saying whose it is,
// and none of their words anywhere on the page; at 390 px too.
func TestBrowserFailuresOfOthersAreWithheld(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	in := start(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:0", "ADAPTBOT_ADMIN_TOKEN": "s3cret-admin-token"})
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	admin := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"}
	keys := map[string]string{}
	for name, role := range map[string]string{"bob": "builder", "ann": "user"} {
		code, _, raw := in.send(t, "POST", "/api/users", `{"name": "`+name+`", "role": "`+role+`"}`, admin)
		if code != 201 {
			t.Fatalf("add %s = %d %s", name, code, raw)
		}
		keys[name] = str(jsonBody(t, raw)["key"])
	}
	bob := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + keys["bob"]}
	if code, _, raw := in.send(t, "POST", "/api/tools/calculator/run", `{"expression": "bobqrs7"}`, bob); code != 422 {
		t.Fatalf("bob's failing run = %d %s", code, raw)
	}

	ctx := browse(t, chrome)
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(in.url+"/login"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), keys["ann"]),
		chromedp.Click(chromedp.ID("sign-in-key")),
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.Navigate(in.url+"/tools/calculator"),
		// The store writes its cases once a second; the page reads them
		// as they stand.
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#failures-table tbody tr').length === 1`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatalf("browser: %v\nserver output:\n%s", err, in.out)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#failures-table tbody tr`)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, "bobqrs7") {
		t.Errorf("ann's page shows bob's words: %s", row)
	}
	if !strings.Contains(row, "someone else’s input") || !strings.Contains(row, "unknown name") || !strings.Contains(row, "v1") {
		t.Errorf("the failure row = %q; want who the input is withheld for, the error and the version", row)
	}
	screenshot(t, ctx, "failures-withheld")
	fits390(t, ctx, in.url, "/tools/calculator")
	screenshot(t, ctx, "failures-withheld-390")
}
