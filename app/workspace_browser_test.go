package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// withExamples copies the shipped examples of the named tools into a test's
// tools folder (start copies sources only).
func withExamples(names ...string) func(dir string) {
	return func(dir string) {
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join("..", "tools", n, "examples.json"))
			if err != nil {
				panic(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tools", n, "examples.json"), b, 0o644); err != nil {
				panic(err)
			}
		}
	}
}

// screenshot saves a full-page PNG under ADAPTBOT_SCREENSHOT_DIR, if set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("ADAPTBOT_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o644)
}

// fits390 loads each path in a 390 px wide viewport and fails for any page
// that scrolls sideways.
func fits390(t *testing.T, ctx context.Context, base string, paths ...string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		err := chromedp.Do(ctx, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("header.top")))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if w > 390 {
			t.Errorf("%s is %d px wide at a 390 px viewport: it scrolls sideways", p, w)
		}
		screenshot(t, ctx, "390"+strings.ReplaceAll(strings.TrimSuffix(p, "/"), "/", "-"))
	}
}

// TestBrowserToolsWorkspace goes from the list to a tool, runs it with the
// form, tests its examples, then edits its file by hand and compares the
// new version with the one before. No model is configured: the tools page
// works without one.
func TestBrowserToolsWorkspace(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	in := start(t, nil, withExamples("calculator"))
	ctx := browse(t, chrome)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	err := chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/tools"),
		chromedp.WaitVisible(chromedp.ID("search")),
		chromedp.SendKeys(chromedp.ID("search"), "arithmetic"),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('#tools tbody tr')].filter(r => !r.hidden).map(r => r.dataset.name).join() === 'calculator'`, chromedp.WithPollingTimeout(5*time.Second)),
	)
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	page, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "No language model is configured") {
		t.Errorf("/tools does not say that tools run without a model")
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href="/tools/calculator"]`)),
		chromedp.WaitVisible(chromedp.ID("run-form")),
		chromedp.SendKeys(chromedp.ID("f-expression"), "2^10 + 1"),
		chromedp.Click(chromedp.ID("run")),
		chromedp.Poll[chromedp.Void](`document.getElementById('run-out').textContent.includes('= 1025')`, chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.Click(chromedp.ID("test")),
		chromedp.Poll[chromedp.Void](`document.getElementById('test-out').textContent.includes('All examples pass')`, chromedp.WithPollingTimeout(15*time.Second)),
	)
	if err != nil {
		t.Fatalf("run and test: %v\nserver output:\n%s", err, in.out)
	}
	hl, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#source .chroma span').length`))
	if err != nil || hl < 50 {
		t.Errorf("source is not highlighted: %d spans, %v", hl, err)
	}
	screenshot(t, ctx, "tool-run")

	// A hand edit makes version 2; its diff with version 1 shows the change.
	src, err := os.ReadFile("../tools/calculator/calculator.go")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), `"the expression is empty"`, `"the expression is blank: type one, such as 2 + 2"`, 1)
	if edited == string(src) {
		t.Fatal("the edit changed nothing")
	}
	writeTool(t, in.dir, "calculator", edited)
	poll.Until(t, "version 2 serves", func() bool {
		_, r := in.do(t, "GET", "/api/tools/calculator", "")
		return r["version"] == float64(2)
	})
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#versions .diff-btn[data-to="2"]`)),
		chromedp.Click(chromedp.CSS(`#versions .diff-btn[data-to="2"]`)),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('#versions pre.diff .add')].some(s => s.textContent.includes('is blank'))`, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if err != nil {
		t.Fatalf("diff: %v", err)
	}
	removed, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll('#versions pre.diff .del')].some(s => s.textContent.includes('is empty'))`))
	if err != nil || !removed {
		t.Errorf("the diff does not show the removed line (%v)", err)
	}
	screenshot(t, ctx, "tool-diff")

	fits390(t, ctx, in.url, "/tools", "/tools/calculator", "/dashboard", "/")

	// Delete asks first, then goes back to the list, without the tool.
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url+"/tools/calculator"),
		chromedp.WaitVisible(chromedp.ID("delete")),
		chromedp.Click(chromedp.ID("delete")),
		chromedp.WaitVisible(chromedp.ID("delete-yes")),
		chromedp.Click(chromedp.ID("delete-yes")),
		chromedp.Poll[chromedp.Void](`document.getElementById('delete-out').textContent.includes('is deleted')`, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Sleep(1500*time.Millisecond), // the page goes back to the list
		chromedp.WaitVisible(chromedp.ID("search")),
	)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if gone, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`location.pathname === '/tools' && !document.querySelector('tr[data-name="calculator"]')`)); err != nil || !gone {
		t.Errorf("after delete the list still shows calculator (%v)", err)
	}
	if code, _ := in.do(t, "GET", "/api/tools/calculator", ""); code != 404 {
		t.Errorf("calculator after delete = %d", code)
	}
}

// TestBrowserChatMarkdownTraceAndReload asks a question whose answer is
// Markdown, opens its trace, sends an answer carrying HTML that would run
// script, and reloads: the conversation is still there.
func TestBrowserChatMarkdownTraceAndReload(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		switch f := r.Forced(); f {
		case "set_intent":
			return llmtest.Call(f, `{"intent":"CHAT"}`)
		case "route":
			return llmtest.Call(f, `{"decision":"general"}`)
		case "":
			if strings.Contains(r.LastUser(), "html") {
				return llmtest.Say("Careful: <img src=x onerror=\"window.__xss=1\"> <script>window.__xss=2</script><a href=\"javascript:window.__xss=3\">link</a> done.")
			}
			return llmtest.Say("# Plan\n\nThis is **bold** and `code`.\n\n- one\n- two\n")
		}
		return llmtest.Say("I am not sure.")
	})
	in := start(t, modelEnv(llmSrv))
	ctx := browse(t, chrome)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(in.url),
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.SendKeys(chromedp.ID("message"), "plan my day"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](`!!document.querySelector('.msg.bot .md strong') && !document.getElementById('send').disabled`, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Click(chromedp.CSS(".msg.bot .badge.path")),
		chromedp.Poll[chromedp.Void](`!!document.querySelector('.trace td.node') && document.querySelector('.trace .sum').textContent.includes('(stored)')`, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if err != nil {
		t.Fatalf("chat: %v\nserver output:\n%s", err, in.out)
	}
	md, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.msg.bot .md').innerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h1>Plan</h1>", "<strong>bold</strong>", "<code>code</code>", "<li>one</li>"} {
		if !strings.Contains(md, want) {
			t.Errorf("answer HTML lacks %s:\n%s", want, md)
		}
	}
	trace, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".trace")))
	if err != nil {
		t.Fatal(err)
	}
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.parse(localStorage.getItem('adaptbot.chat')).find(e => e.role === 'bot').result.request_id`))
	if err != nil || id == "" || !strings.Contains(trace, id) || !strings.Contains(trace, "1 model call ·") {
		t.Errorf("trace = %q (request %q, %v)", trace, id, err)
	}
	screenshot(t, ctx, "chat-trace")
	if code, r := in.do(t, "GET", "/api/requests/"+id, ""); code != 200 || r["kind"] != "chat" || r["query"] != "plan my day" {
		t.Errorf("GET /api/requests/%s = %d %v", id, code, r)
	}

	// HTML in an answer never runs.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("message"), "show me some html"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('.msg.bot').length === 2 && !document.getElementById('send').disabled`, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Sleep(300*time.Millisecond), // give a broken image's onerror time to fire
	)
	if err != nil {
		t.Fatal(err)
	}
	ran, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.__xss) + ' ' + document.querySelectorAll('[onerror], script:not([src]), a[href^="javascript"]').length`))
	if err != nil || ran != "undefined 0" {
		t.Errorf("HTML in an answer ran or stayed in the page: %q, %v", ran, err)
	}

	// A reload keeps the conversation.
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('.msg.user').length === 2 && !!document.querySelector('.msg.bot .md strong')`, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.EmulateViewport(390, 844),
		chromedp.Click(chromedp.CSS(".msg.bot .badge.path")),
		chromedp.WaitVisible(chromedp.CSS(".trace td.node")),
	)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 390 {
		t.Errorf("the chat with a trace open is %d px wide at 390 (%v)", w, err)
	}
	screenshot(t, ctx, "chat-390")
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("new-chat")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('.msg').length === 0`, chromedp.WithPollingTimeout(5*time.Second)),
	)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
}

// TestBrowserModelDownBanner: with a model that does not answer, the chat
// page says so and names the URL the server tried.
func TestBrowserModelDownBanner(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	in := start(t, map[string]string{"OPENAI_BASE_URL": dead, "OPENAI_API_KEY": "x"})
	ctx := browse(t, chrome)
	err = chromedp.Do(ctx,
		chromedp.Navigate(in.url),
		chromedp.Poll[chromedp.Void](`!document.getElementById('model-down').hidden`, chromedp.WithPollingTimeout(15*time.Second)),
	)
	if err != nil {
		t.Fatalf("banner: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("model-down")))
	if err != nil || !strings.Contains(text, "does not answer") || !strings.Contains(text, dead+"/models") {
		t.Errorf("banner = %q, %v", text, err)
	}
}

// fakeChatStream replaces the page's fetch of /chat with a scripted
// Server-Sent Events stream: the first call fails with an error event, the
// next ones stream two tokens, wait until window.release() is called, then
// send the result. It tests what the page does with whatever the server
// sends, independently of the model.
const fakeChatStream = `(() => {
  const enc = new TextEncoder();
  let calls = 0, release;
  window.released = new Promise(r => { release = r; });
  window.release = () => release();
  const real = window.fetch;
  window.fetch = (url, opts) => {
    if (url !== '/chat') return real(url, opts);
    calls++;
    const first = calls === 1;
    const body = new ReadableStream({async start(c) {
      const send = (ev, data) => c.enqueue(enc.encode('event: ' + ev + '\ndata: ' + JSON.stringify(data) + '\n\n'));
      if (first) { send('error', {error: 'the model failed to answer: overloaded', status: 503, request_id: 'r1'}); c.close(); return; }
      send('token', {text: 'Here is **Hel'});
      send('token', {text: 'lo** <img src=x onerror="window.__xss=1">'});
      await window.released;
      send('result', {response: 'Here is **Hello** <img src=x onerror="window.__xss=1">', intent: 'CHAT', path: 'general', request_id: 'r2', total_ms: 12.5, llm_calls: 2,
        usage: {prompt_tokens: 10, completion_tokens: 3},
        trace: [{node: 'intent', ms: 1.5, llm_calls: 1, prompt_tokens: 5, completion_tokens: 1}, {node: 'general', ms: 10, llm_calls: 1}]});
      c.close();
    }});
    return Promise.resolve(new Response(body, {status: 200, headers: {'Content-Type': 'text/event-stream'}}));
  };
})()`

// TestBrowserChatStreamsRetriesAndDisablesSend: tokens render as they
// arrive, Send stays disabled until the answer ends, and an error offers
// Retry, which asks again.
func TestBrowserChatStreamsRetriesAndDisablesSend(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	in := start(t, nil)
	ctx := browse(t, chrome)
	err := chromedp.Do(ctx,
		chromedp.Navigate(in.url),
		chromedp.WaitVisible(chromedp.ID("message")),
		chromedp.Evaluate[chromedp.Void](fakeChatStream),
		chromedp.SendKeys(chromedp.ID("message"), "hello"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(".msg.bot.error .retry")),
		chromedp.Click(chromedp.CSS(".msg.bot.error .retry")),
		// Streaming: the tokens so far are rendered, Send is disabled.
		chromedp.Poll[chromedp.Void](`document.querySelector('.msg.bot .md strong')?.textContent === 'Hello'`, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('send').disabled + ' ' + document.querySelectorAll('.msg.bot').length + ' ' + document.querySelectorAll('.msg.error').length`))
	if err != nil || state != "true 1 0" {
		t.Errorf("while streaming: send disabled, bot messages, errors = %q (%v)", state, err)
	}
	err = chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`window.release()`),
		chromedp.Poll[chromedp.Void](`!document.getElementById('send').disabled`, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Click(chromedp.CSS(".msg.bot .badge.path")),
		chromedp.WaitVisible(chromedp.CSS(".trace td.node")),
	)
	if err != nil {
		t.Fatal(err)
	}
	trace, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".trace")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"intent", "1.5 ms", "5 + 1 tokens", "total 12.5 ms", "2 model calls", "10 prompt + 3 completion tokens", "r2"} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, trace)
		}
	}
	if ran, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.__xss) + ' ' + document.querySelectorAll('[onerror]').length`)); err != nil || ran != "undefined 0" {
		t.Errorf("streamed HTML ran: %q %v", ran, err)
	}
}
