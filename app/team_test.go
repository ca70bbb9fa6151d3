package main

import (
	"strings"
	"testing"

	"adaptbot/llm/llmtest"
)

// TestTwoPeopleAndAnAdmin is a team on one server, all from one address:
// each person sees only their own requests and traces (someone else's is
// not found), a user cannot build or read the dashboard, a builder builds
// but cannot delete, the admin sees everything, and nobody signed in gets
// 401 on everything but the sign-in page and /healthz.
func TestTwoPeopleAndAnAdmin(t *testing.T) {
	srv := llmtest.New(t, romanScript(t))
	env := modelEnv(srv)
	env["ADAPTBOT_ADDR"] = "0.0.0.0:0"
	env["ADAPTBOT_ADMIN_TOKEN"] = "s3cret-admin-token"
	in := start(t, env)
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	as := func(key string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key}
	}
	add := func(name, role string) string {
		t.Helper()
		code, _, raw := in.send(t, "POST", "/api/users", `{"name": "`+name+`", "role": "`+role+`"}`, as("s3cret-admin-token"))
		key, _ := jsonBody(t, raw)["key"].(string)
		if code/100 != 2 || key == "" {
			t.Fatalf("add %s = %d %s", name, code, raw)
		}
		return key
	}
	ann, bob := add("ann", "user"), add("bob", "builder")

	// Each chats once; each sees their own request alone.
	ids := map[string]string{}
	for who, key := range map[string]string{"ann": ann, "bob": bob} {
		code, _, raw := in.send(t, "POST", "/chat", `{"message": "hello from `+who+`"}`, as(key))
		if code != 200 {
			t.Fatalf("%s's chat = %d %s", who, code, raw)
		}
		ids[who] = str(jsonBody(t, raw)["request_id"])
	}
	for who, key := range map[string]string{"ann": ann, "bob": bob} {
		other := map[string]string{"ann": "bob", "bob": "ann"}[who]
		_, _, raw := in.send(t, "GET", "/api/requests", "", as(key))
		list, _ := jsonBody(t, raw)["requests"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["request_id"] != ids[who] {
			t.Errorf("%s's list = %s", who, raw)
		}
		if code, _, _ := in.send(t, "GET", "/api/requests/"+ids[who], "", as(key)); code != 200 {
			t.Errorf("%s's own trace = %d", who, code)
		}
		if code, _, raw := in.send(t, "GET", "/api/requests/"+ids[other], "", as(key)); code != 404 || strings.Contains(string(raw), "hello from") {
			t.Errorf("%s reads %s's trace: %d %s", who, other, code, raw)
		}
	}
	_, _, raw := in.send(t, "GET", "/api/requests", "", as("s3cret-admin-token"))
	if list, _ := jsonBody(t, raw)["requests"].([]any); len(list) < 2 {
		t.Errorf("the admin's list = %s", raw)
	}

	// Roles.
	build := `{"request": "make a tool that writes roman numerals", "op": "create", "tool": "roman_numerals"}`
	for _, tt := range []struct {
		who, key, method, path, body string
		want                         int
	}{
		{"ann", ann, "POST", "/api/tools/build", build, 403},
		{"ann", ann, "GET", "/dashboard", "", 403},
		{"ann", ann, "GET", "/api/benchmarks", "", 403},
		{"bob", bob, "GET", "/dashboard", "", 403},
		{"bob", bob, "DELETE", "/api/tools/calculator", "", 403},
		{"admin", "s3cret-admin-token", "GET", "/api/benchmarks", "", 200},
	} {
		if code, _, raw := in.send(t, tt.method, tt.path, tt.body, as(tt.key)); code != tt.want {
			t.Errorf("%s %s %s = %d %s, want %d", tt.who, tt.method, tt.path, code, raw, tt.want)
		}
	}
	code, _, raw := in.send(t, "POST", "/api/tools/build", build, map[string]string{"Content-Type": "application/json",
		"Authorization": "Bearer " + bob, "Accept": "text/event-stream"})
	if code != 200 || !strings.Contains(string(raw), "event: result") || !strings.Contains(string(raw), `"ok":true`) {
		t.Errorf("bob's build = %d %s", code, raw)
	}

	// Remove ann and add a new ann: a new person, with none of the old
	// one's requests (the pseudonym comes from an ID fixed at creation,
	// not from the name).
	if code, _, raw := in.send(t, "DELETE", "/api/users/ann", "", as("s3cret-admin-token")); code != 200 {
		t.Fatalf("remove ann = %d %s", code, raw)
	}
	ann2 := add("ann", "user")
	if _, _, raw := in.send(t, "GET", "/api/requests", "", as(ann2)); strings.Contains(string(raw), ids["ann"]) {
		t.Errorf("the new ann lists the old one's request: %s", raw)
	}
	if code, _, raw := in.send(t, "GET", "/api/requests/"+ids["ann"], "", as(ann2)); code != 404 || strings.Contains(string(raw), "hello from") {
		t.Errorf("the new ann reads the old one's trace: %d %s", code, raw)
	}

	// Nobody signed in.
	for _, path := range []string{"/", "/api/tools", "/api/requests", "/dashboard"} {
		if code, _, _ := in.send(t, "GET", path, "", map[string]string{"Accept": "application/json"}); code != 401 {
			t.Errorf("anonymous GET %s = %d, want 401", path, code)
		}
	}
	for _, path := range []string{"/healthz", "/login"} {
		if code, _, _ := in.send(t, "GET", path, "", nil); code != 200 {
			t.Errorf("anonymous GET %s = %d, want 200", path, code)
		}
	}
}
