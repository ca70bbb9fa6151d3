package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
	"adaptbot/cli"
	"adaptbot/llm/llmtest"
	"adaptbot/poll"
	"adaptbot/toolbox"
)

// The "Done when" of tools that act (issue 37), through the real
// server as people meet it: a scripted model builds a webhook tool in the
// chat, its person approves or denies each request it sends, and one
// tool with one secret name carries each person's own value.

// flowAdmin is the admin token of this file's servers.
const flowAdmin = "s3cret-admin-token"

// flowServer starts AdaptBot beyond loopback (so that each key is a
// person of its own) with the toolkit reaching the webhook h, reached on
// 127.0.0.1.
func flowServer(t *testing.T, env map[string]string, h *hook, prepare ...func(dir string)) *instance {
	t.Helper()
	full := map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:0", "ADAPTBOT_ADMIN_TOKEN": flowAdmin}
	for k, v := range env {
		full[k] = v
	}
	in := startWith(t, full, actHooks(h.roots), prepare...)
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	return in
}

// flowKey is the header that sends key, for a stream (which sets its own
// Accept).
func flowKey(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key}
}

// flowAs are the headers of a JSON request sent with key.
func flowAs(key string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "Accept": "application/json", "Authorization": "Bearer " + key}
}

// flowPerson is someone the admin added: their key and pseudonym.
type flowPerson struct{ name, key, pseudonym string }

// flowAdd adds a person with role through the users API.
func flowAdd(t *testing.T, in *instance, name, role string) flowPerson {
	t.Helper()
	code, _, raw := in.send(t, "POST", "/api/users", `{"name": "`+name+`", "role": "`+role+`"}`, flowAs(flowAdmin))
	body := jsonBody(t, raw)
	if code != 201 {
		t.Fatalf("add %s = %d %s", name, code, raw)
	}
	return flowPerson{name, str(body["key"]), str(body["user"].(map[string]any)["pseudonym"])}
}

// flowDo sends a request as key and decodes its JSON answer.
func flowDo(t *testing.T, in *instance, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, _, raw := in.send(t, method, path, body, flowAs(key))
	var m map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		m = jsonBody(t, raw)
	}
	return code, m
}

// flowAnswer answers approval id as key with decision.
func flowAnswer(t *testing.T, in *instance, key, id, decision string) (int, map[string]any) {
	t.Helper()
	return flowDo(t, in, key, "POST", "/api/approvals/"+id, `{"decision": "`+decision+`"}`)
}

// flowApprovalFields are the fields of the chat stream's approval event, as
// the issue names them: no more, no fewer.
var flowApprovalFields = []string{"body", "expires", "id", "method", "tool", "url", "version"}

// flowBuildScript is a model that builds post_hook when asked in the chat,
// with two examples whose requests are answered from their exchanges, and
// then calls it for "post deploy done".
func flowBuildScript(port string) func(llmtest.Request) llmtest.Reply {
	examples := `[{"input": {"text": "deploy done"}, "contains": "posted",
  "http": [{"request": {"method": "POST", "url": "https://` + hookHost + `:` + port + `/services/{{secret:HOOK}}", "body": {"text": "deploy done"}},
            "response": {"status": 200, "body": "ok"}}]},
 {"input": {"text": "rollback"}, "contains": "posted: ok",
  "http": [{"request": {"method": "POST", "url": "https://` + hookHost + `:` + port + `/services/{{secret:HOOK}}", "body": "{\"text\":\"rollback\"}"},
            "response": {"status": 200, "body": "ok"}}]}]`
	args, _ := json.Marshal(map[string]any{"source": postHook(port), "description": "Posts a message to the team's webhook.",
		"category": "chat", "examples": json.RawMessage(examples)})
	return func(r llmtest.Request) llmtest.Reply {
		switch {
		case isSynthesizer(r):
			return llmtest.Say("Done: " + lastOutput(r))
		case isClassifier(r):
			switch r.LastUser() {
			case "make a tool that posts to our team's webhook":
				return llmtest.Call("build_tool", `{"action":"create","tool":"post_hook","summary":"Posts a message to the team's webhook."}`)
			case "post deploy done":
				return llmtest.Call(toolbox.FunctionName("post_hook"), `{"text":"deploy done"}`)
			}
			return llmtest.Say("ok")
		}
		switch f := r.Forced(); f {
		case "decide_build":
			return llmtest.Call(f, `{"op":"CREATE","tool":"post_hook","summary":"Posts a message to the team's webhook."}`)
		case "write_tool":
			return llmtest.Call(f, string(args))
		}
		return llmtest.Say("ok")
	}
}

// flowResult decodes a stream's result event.
func flowResult(t *testing.T, ev sse) map[string]any {
	t.Helper()
	var m map[string]any
	if ev.name != "result" || json.Unmarshal([]byte(ev.data), &m) != nil {
		t.Fatalf("want a result event, got %s %s", ev.name, ev.data)
	}
	return m
}

var flowDigestRE = regexp.MustCompile(`digest ([0-9a-f]{16,})`)

// TestScriptedModelBuildsAWebhookTool: through the chat stream, as the
// chat page sends it, a scripted model builds a tool that posts JSON to a
// webhook with {{secret:HOOK}} in its URL; the gate answers its requests
// from the examples' exchanges, so the webhook gets nothing, and the chat
// says which secret to set and how. The person sets HOOK. Then each
// question asks them first, with the approval event (the secret
// as its placeholder, never its value): on Allow the webhook gets one
// request with the value and the answer says it posted, and a second
// answer is 409; another person's answer is 403; on Deny nothing is sent
// and the answer says nothing was changed; a plain JSON chat holds its
// answer until the decision, found through GET /api/approvals. Each
// decision is its own APPROVE row (the decision, who, the tool, the
// request's digest) that the chat's row links.
func TestScriptedModelBuildsAWebhookTool(t *testing.T) {
	h := startHook(t)
	const canary = "hook-value-31f7c2e9"
	in := flowServer(t, modelEnv(llmtest.New(t, flowBuildScript(h.port()))), h)
	bob, ann := flowAdd(t, in, "bob", "builder"), flowAdd(t, in, "ann", "user")
	chat := func(message string) string {
		b, _ := json.Marshal(map[string]string{"message": message})
		return string(b)
	}

	// The build, in the chat, with the network off for the gate.
	code, evs := in.stream(t, "/chat", chat("make a tool that posts to our team's webhook"), flowKey(bob.key), nil)
	if code != 200 {
		t.Fatalf("the build's chat = %d %v", code, evs)
	}
	built := flowResult(t, last(evs))
	tb, _ := built["tool_build"].(map[string]any)
	if built["intent"] != "BUILD" || tb["ok"] != true || tb["tool"] != "post_hook" {
		t.Fatalf("the build's result = %v", built)
	}
	setHint := "`adaptbot secrets set HOOK --host " + hookHost
	if resp := str(built["response"]); !strings.Contains(resp, setHint) || !strings.Contains(resp, "secrets page") {
		t.Errorf("the build's answer does not say how to set HOOK: %q", resp)
	}
	if got := h.requests(); len(got) != 0 {
		t.Fatalf("the build reached the webhook: %v", got)
	}
	if code, r := flowDo(t, in, bob.key, "PUT", "/api/secrets/HOOK", `{"value": "`+canary+`", "hosts": ["`+hookHost+`"]}`); code != 200 || r["value"] != nil {
		t.Fatalf("bob sets HOOK = %d %v", code, r)
	}

	// chatAsks runs "post deploy done" over the stream as bob and answers
	// its one approval with answer; it returns the approval and the result.
	chatAsks := func(t *testing.T, answer func(a map[string]any)) (map[string]any, map[string]any) {
		t.Helper()
		var a map[string]any
		code, evs := in.stream(t, "/chat", chat("post deploy done"), flowKey(bob.key), func(ev sse) {
			if ev.name != "approval" {
				return
			}
			if a != nil {
				t.Errorf("a second approval event: %s", ev.data)
				return
			}
			a = approvalOf(t, ev)
			if strings.Contains(ev.data, canary) {
				t.Errorf("the approval event holds the secret's value: %s", ev.data)
			}
			answer(a)
		})
		if code != 200 || a == nil {
			t.Fatalf("chat = %d %v; want an approval event", code, evs)
		}
		return a, flowResult(t, last(evs))
	}
	type decision struct{ id, chat, outcome, digest string }
	var decisions []decision
	note := func(a, res map[string]any, outcome string) {
		recs, _ := res["approvals"].([]any)
		if len(recs) != 1 {
			t.Errorf("the chat's result lists approvals %v", res["approvals"])
			return
		}
		rec := recs[0].(map[string]any)
		if rec["id"] != a["id"] || rec["outcome"] != outcome || rec["asker"] != bob.pseudonym {
			t.Errorf("the chat's record of its approval = %v", rec)
		}
		decisions = append(decisions, decision{str(a["id"]), str(res["request_id"]), outcome, str(rec["digest"])})
	}

	t.Run("allow", func(t *testing.T) {
		a, res := chatAsks(t, func(a map[string]any) {
			var keys []string
			for k := range a {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, flowApprovalFields) {
				t.Errorf("the approval event's fields = %v, want %v", keys, flowApprovalFields)
			}
			exp, err := time.Parse(time.RFC3339, str(a["expires"]))
			if a["tool"] != "post_hook" || a["version"] != float64(1) || a["method"] != "POST" ||
				a["url"] != "https://"+hookHost+":"+h.port()+"/services/{{secret:HOOK}}" || a["body"] != `{"text":"deploy done"}` ||
				str(a["id"]) == "" || err != nil || !exp.After(time.Now()) {
				t.Errorf("the approval event = %v", a)
			}
			if got := h.requests(); len(got) != 0 {
				t.Errorf("sent before the answer: %v", got)
			}
			if code, r := flowAnswer(t, in, bob.key, str(a["id"]), "allow"); code != 200 || r["outcome"] != "allowed" {
				t.Errorf("bob allows = %d %v", code, r)
			}
		})
		got := h.requests()
		if len(got) != 1 || got[0].Method != "POST" || got[0].Path != "/services/"+canary || got[0].Body != `{"text":"deploy done"}` {
			t.Fatalf("after Allow the webhook got %v, want one POST carrying the value", got)
		}
		resp := str(res["response"])
		if !strings.Contains(resp, "posted") || !strings.Contains(resp, "[secret:HOOK]") || strings.Contains(resp, canary) {
			t.Errorf("the answer after Allow = %q", resp)
		}
		if code, r := flowAnswer(t, in, bob.key, str(a["id"]), "allow"); code != http.StatusConflict {
			t.Errorf("a second answer = %d %v, want 409", code, r)
		}
		if len(h.requests()) != 1 {
			t.Errorf("a second answer sent again: %v", h.requests())
		}
		note(a, res, "allowed")
	})

	t.Run("another person, then deny", func(t *testing.T) {
		a, res := chatAsks(t, func(a map[string]any) {
			if code, r := flowAnswer(t, in, ann.key, str(a["id"]), "allow"); code != http.StatusForbidden {
				t.Errorf("ann answers bob's approval = %d %v, want 403", code, r)
			}
			if code, r := flowAnswer(t, in, bob.key, str(a["id"]), "deny"); code != 200 || r["outcome"] != "denied" {
				t.Errorf("bob denies = %d %v", code, r)
			}
		})
		if got := h.requests(); len(got) != 1 {
			t.Errorf("after Deny the webhook got %v", got)
		}
		if resp := str(res["response"]); !strings.Contains(resp, "denied") || !strings.Contains(resp, "nothing was changed") {
			t.Errorf("the answer after Deny = %q", resp)
		}
		if _, r := flowDo(t, in, flowAdmin, "GET", "/api/tools/post_hook/failures", ""); str(r["open"]) != "0" {
			t.Errorf("a denial made a failure case: %v", r)
		}
		note(a, res, "denied")
	})

	t.Run("plain JSON chat holds until the decision", func(t *testing.T) {
		type reply struct {
			code int
			raw  []byte
			err  error
		}
		done := make(chan reply, 1)
		go func() { // no t.Fatal off the test's goroutine
			req, _ := http.NewRequest("POST", in.url+"/chat", strings.NewReader(chat("post deploy done")))
			for k, v := range flowAs(bob.key) {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- reply{err: err}
				return
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			done <- reply{resp.StatusCode, raw, err}
		}()
		var a map[string]any
		poll.Until(t, "bob's approval is pending", func() bool {
			_, list := flowDo(t, in, bob.key, "GET", "/api/approvals", "")
			if as, _ := list["approvals"].([]any); len(as) == 1 {
				a = as[0].(map[string]any)
			}
			return a != nil
		})
		if _, list := flowDo(t, in, ann.key, "GET", "/api/approvals", ""); list["count"] != float64(0) {
			t.Errorf("ann lists bob's approval: %v", list)
		}
		select {
		case r := <-done:
			t.Fatalf("the JSON chat answered before the decision: %d %s", r.code, r.raw)
		default:
		}
		if code, r := flowAnswer(t, in, bob.key, str(a["id"]), "allow"); code != 200 {
			t.Fatalf("bob allows = %d %v", code, r)
		}
		var r reply
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the JSON chat did not answer after the decision")
		}
		if r.err != nil {
			t.Fatalf("the JSON chat: %v", r.err)
		}
		res := jsonBody(t, r.raw)
		if r.code != 200 || !strings.Contains(str(res["response"]), "posted") {
			t.Errorf("the JSON chat = %d %s", r.code, r.raw)
		}
		if got := h.requests(); len(got) != 2 || got[1].Path != "/services/"+canary {
			t.Errorf("after the JSON chat's Allow the webhook got %v", got)
		}
		note(a, res, "allowed")
	})

	// Each decision is its own row, linked to the chat that asked; the
	// refused answers are rows of their own too.
	rows := in.rows(t)
	byID := map[string]map[string]string{}
	for _, r := range rows {
		byID[r["request_id"]] = r
	}
	for _, d := range decisions {
		var row map[string]string
		for _, r := range rows {
			if r["intent"] == adaptbot.IntentApprove && r["error_kind"] == "" && strings.Contains(r["query"], d.id) {
				if row != nil {
					t.Errorf("approval %s has two decision rows", d.id)
				}
				row = r
			}
		}
		m := flowDigestRE.FindStringSubmatch(row["query"])
		if row == nil || row["category"] != d.outcome || row["user"] != bob.pseudonym || row["tools"] != "post_hook" ||
			row["rated_request"] != d.chat || m == nil || m[1] != d.digest || !strings.Contains(row["query"], "asked of "+bob.pseudonym) {
			t.Errorf("the decision row of approval %s = %v, want %s by %s, digest %s, linked to %s", d.id, row, d.outcome, bob.pseudonym, d.digest, d.chat)
		}
		if c := byID[d.chat]; c == nil || c["intent"] != adaptbot.IntentChat || c["user"] != bob.pseudonym {
			t.Errorf("the chat row %s = %v", d.chat, c)
		}
	}
	var conflict, forbidden bool
	for _, r := range rows {
		if r["intent"] != adaptbot.IntentApprove {
			continue
		}
		if strings.Contains(r["query"], canary) || strings.Contains(r["error_message"], canary) {
			t.Errorf("a row holds the value: %v", r)
		}
		conflict = conflict || (r["error_kind"] == "conflict" && r["user"] == bob.pseudonym)
		forbidden = forbidden || (r["error_kind"] == "forbidden" && r["user"] == ann.pseudonym)
	}
	if len(decisions) != 3 || !conflict || !forbidden {
		t.Errorf("decisions %v; a row of the second answer %v, of ann's %v", decisions, conflict, forbidden)
	}
}

// TestEachPersonTheirOwnSecret: one tool, one secret name HOOK. Ann and
// bob each set their own value (ann through the API, bob with `adaptbot
// secrets set`), and each one's run carries their own to the webhook,
// never the other's. Carol, with none, gets the clear error that names
// HOOK and says how to set it, on every door (chat, API, MCP, CLI), and
// nothing is sent or asked. Once an admin shares a value, carol's run
// carries it, and ann's still carries her own.
func TestEachPersonTheirOwnSecret(t *testing.T) {
	h := startHook(t)
	script := newScript(map[string]string{"post deploy done": "post_hook"}, map[string]string{"post deploy done": `{"text":"deploy done"}`})
	in := flowServer(t, modelEnv(llmtest.New(t, script.reply)), h, func(dir string) {
		writeTool(t, dir, "post_hook", postHook(h.port()))
	})
	poll.Until(t, "post_hook serves", func() bool {
		code, _ := flowDo(t, in, flowAdmin, "GET", "/api/tools/post_hook", "")
		return code == 200
	})
	ann, bob, carol := flowAdd(t, in, "ann", "builder"), flowAdd(t, in, "bob", "builder"), flowAdd(t, in, "carol", "builder")
	const annValue, bobValue, sharedValue = "ann-hook-5b1e", "bob-hook-9c47", "team-hook-2d80"
	values := []string{annValue, bobValue, sharedValue}
	// cli runs a command as p, in a folder of its own (so through the
	// server), and returns all it prints, as main prints an error, and
	// its exit code.
	command := func(p flowPerson, stdin string, args ...string) (string, int) {
		t.Helper()
		env := cliEnv(t.TempDir(), serverAddr(t, in))
		env["ADAPTBOT_KEY"] = p.key
		out, err := runEnv(t, env, strings.NewReader(stdin), args...)
		var printed strings.Builder
		code := cli.ExitCode(err, &printed)
		return out + printed.String(), code
	}
	if code, r := flowDo(t, in, ann.key, "PUT", "/api/secrets/HOOK", `{"value": "`+annValue+`", "hosts": ["`+hookHost+`"]}`); code != 200 {
		t.Fatalf("ann sets HOOK = %d %v", code, r)
	}
	if out, code := command(bob, bobValue+"\n", "secrets", "set", "HOOK", "--host", hookHost); code != 0 || strings.Contains(out, bobValue) {
		t.Fatalf("bob's secrets set: exit %d\n%s", code, out)
	}
	// Each lists their own alone.
	for _, p := range []flowPerson{ann, bob} {
		code, _, raw := in.send(t, "GET", "/api/secrets", "", flowAs(p.key))
		list := jsonBody(t, raw)
		ss, _ := list["secrets"].([]any)
		if code != 200 || len(ss) != 1 || str(ss[0].(map[string]any)["owner"]) != p.pseudonym {
			t.Errorf("%s's secrets = %d %s", p.name, code, raw)
		}
		for _, v := range values {
			if strings.Contains(string(raw), v) {
				t.Errorf("%s's list holds a value: %s", p.name, raw)
			}
		}
	}

	// runAPI runs post_hook as p over the API's stream, allowing its
	// approval as p; it returns the events.
	runAPI := func(p flowPerson, text string) []sse {
		t.Helper()
		code, evs := in.stream(t, "/api/tools/post_hook/run", `{"text": "`+text+`"}`, flowKey(p.key), func(ev sse) {
			if ev.name == "approval" {
				if code, r := flowAnswer(t, in, p.key, str(approvalOf(t, ev)["id"]), "allow"); code != 200 {
					t.Errorf("%s allows = %d %v", p.name, code, r)
				}
			}
		})
		if code != 200 {
			t.Fatalf("%s's run = %d %v", p.name, code, evs)
		}
		return evs
	}
	// mcpSession opens /mcp as p, a client that elicits and allows.
	mcpSession := func(p flowPerson) *sdk.ClientSession {
		t.Helper()
		client := sdk.NewClient(&sdk.Implementation{Name: "acting-flow", Version: "1"}, &sdk.ClientOptions{
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow"}}, nil
			}})
		cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: in.url + "/mcp",
			HTTPClient: &http.Client{Transport: &keyTransport{key: p.key}}}, nil)
		if err != nil {
			t.Fatalf("%s connects over /mcp: %v", p.name, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	// sent checks that the webhook's newest request is text with value,
	// and that no other person's value reached it.
	sent := func(who, text, value string, n int) {
		t.Helper()
		got := h.requests()
		if len(got) != n {
			t.Fatalf("%s: the webhook got %d requests, want %d: %v", who, len(got), n, got)
		}
		if r := got[n-1]; r.Path != "/services/"+value || r.Body != `{"text":"`+text+`"}` {
			t.Errorf("%s's run reached the webhook as %+v, want their value %s", who, r, value)
		}
	}

	t.Run("each their own", func(t *testing.T) {
		evs := runAPI(ann, "from ann")
		if ev := last(evs); ev.name != "result" || !strings.Contains(ev.data, "posted") || strings.Contains(ev.data, annValue) {
			t.Errorf("ann's run = %v", evs)
		}
		sent("ann", "from ann", annValue, 1)
		text, isErr := callTool(t, mcpSession(bob), "post_hook", map[string]any{"text": "from bob"})
		if isErr || !strings.Contains(text, "posted") || strings.Contains(text, bobValue) {
			t.Errorf("bob's call over /mcp = %q (error %v)", text, isErr)
		}
		sent("bob", "from bob", bobValue, 2)
	})

	t.Run("none set: every door says how to set it", func(t *testing.T) {
		hint := "the secret HOOK is not set for you: set it with `adaptbot secrets set HOOK --host " + hookHost
		says := func(door, text string) {
			t.Helper()
			if !strings.Contains(text, hint) || !strings.Contains(text, "secrets page") {
				t.Errorf("carol over %s: %q\nwant it to say %q", door, text, hint)
			}
			for _, v := range values {
				if strings.Contains(text, v) {
					t.Errorf("carol over %s sees a value: %q", door, text)
				}
			}
		}
		code, _, raw := in.send(t, "POST", "/chat", `{"message": "post deploy done"}`, flowAs(carol.key))
		if code != 200 {
			t.Errorf("carol's chat = %d %s", code, raw)
		}
		says("chat", str(jsonBody(t, raw)["response"]))
		evs := runAPI(carol, "from carol")
		if len(evs) != 1 || evs[0].name != "error" {
			t.Errorf("carol's API run = %v, want one error event and no approval", evs)
		}
		says("the API", last(evs).data)
		text, isErr := callTool(t, mcpSession(carol), "post_hook", map[string]any{"text": "from carol"})
		if !isErr {
			t.Errorf("carol's call over /mcp is no error: %q", text)
		}
		says("MCP", text)
		out, exit := command(carol, "", "tools", "run", "post_hook", `{"text": "from carol"}`, "--yes")
		if exit == 0 {
			t.Errorf("carol's tools run succeeded: %s", out)
		}
		says("the CLI", out)
		if got := h.requests(); len(got) != 2 {
			t.Errorf("carol's runs reached the webhook: %v", got)
		}
		// A secret not set is the person's to fix, not the tool's fault.
		if _, r := flowDo(t, in, flowAdmin, "GET", "/api/tools/post_hook/failures", ""); str(r["open"]) != "0" {
			t.Errorf("a secret not set made a failure case: %v", r)
		}
	})

	t.Run("a shared value, and one's own first", func(t *testing.T) {
		if code, r := flowDo(t, in, bob.key, "PUT", "/api/secrets/HOOK", `{"value": "`+sharedValue+`", "hosts": ["`+hookHost+`"], "shared": true}`); code != http.StatusForbidden {
			t.Errorf("a builder shares a value = %d %v, want 403", code, r)
		}
		if code, r := flowDo(t, in, flowAdmin, "PUT", "/api/secrets/HOOK", `{"value": "`+sharedValue+`", "hosts": ["`+hookHost+`"], "shared": true}`); code != 200 {
			t.Fatalf("the admin shares HOOK = %d %v", code, r)
		}
		out, exit := command(carol, "", "tools", "run", "post_hook", `{"text": "from carol"}`, "--yes")
		if exit != 0 || !strings.Contains(out, "posted") || !strings.Contains(out, "Allowed (--yes)") || strings.Contains(out, sharedValue) {
			t.Errorf("carol's tools run --yes: exit %d\n%s", exit, out)
		}
		sent("carol", "from carol", sharedValue, 3)
		var asked bool
		code, evs := in.stream(t, "/chat", `{"message": "post deploy done"}`, flowKey(ann.key), func(ev sse) {
			if ev.name == "approval" {
				asked = true
				if code, r := flowAnswer(t, in, ann.key, str(approvalOf(t, ev)["id"]), "allow"); code != 200 {
					t.Errorf("ann allows = %d %v", code, r)
				}
			}
		})
		if code != 200 || !asked || !strings.Contains(last(evs).data, "posted") {
			t.Errorf("ann's chat = %d %v", code, evs)
		}
		sent("ann", "deploy done", annValue, 4)
	})

	// No row holds a value.
	for _, r := range in.rows(t) {
		for _, v := range values {
			if strings.Contains(strings.Join(slices.Collect(maps.Values(r)), "\x00"), v) {
				t.Errorf("a row holds %q: %v", v, r)
			}
		}
	}
}
