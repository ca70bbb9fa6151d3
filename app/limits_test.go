package main

import (
	"strings"
	"testing"

	"adaptbot/poll"
)

// TestFairShareOfSlots: one person holding slow chats up to their share of
// the in-flight slots (a quarter by default: 1 of 4) is told to wait, with
// Retry-After and the setting's name, while someone else still gets a
// slot. Before, ann's chats took every slot and bob got 503.
func TestFairShareOfSlots(t *testing.T) {
	llmSrv, free := holdingModel(t)
	env := modelEnv(llmSrv)
	env["ADAPTBOT_MAX_INFLIGHT"] = "4"
	env["ADAPTBOT_RATE_LIMIT"] = "off"
	in, annKey, annP := teamWorld(t, env)
	admin := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"}
	code, _, raw := in.send(t, "POST", "/api/users", `{"name": "bob", "role": "user"}`, admin)
	if code != 201 {
		t.Fatalf("add bob = %d %s", code, raw)
	}
	bobKey := str(jsonBody(t, raw)["key"])
	as := func(key string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key}
	}

	held := make(chan int, 1)
	go func() {
		code, _, _ := in.send(t, "POST", "/chat", `{"message":"hold on"}`, as(annKey))
		held <- code
	}()
	poll.Until(t, "ann's chat to reach the model", func() bool { return len(llmSrv.Requests()) > 0 })

	n := len(in.rows(t))
	code, h, raw := in.send(t, "POST", "/chat", `{"message":"hello"}`, as(annKey))
	if code != 429 || h.Get("Retry-After") == "" || !strings.Contains(string(raw), "ADAPTBOT_MAX_INFLIGHT_PER_USER") {
		t.Errorf("ann's chat past her share = %d %v %s; want 429 with Retry-After naming the setting", code, h, raw)
	}
	oneRow(t, in, n, raw, map[string]string{"user": annP, "intent": "CHAT", "error_kind": "limited"})

	if code, _, raw := in.send(t, "POST", "/chat", `{"message":"hello"}`, as(bobKey)); code != 200 {
		t.Errorf("bob's chat while ann holds her share = %d %s; want 200", code, raw)
	}
	free()
	if code := <-held; code != 200 {
		t.Errorf("ann's held chat = %d", code)
	}
	// Her slot is hers again once the chat ended.
	if code, _, raw := in.send(t, "POST", "/chat", `{"message":"hello"}`, as(annKey)); code != 200 {
		t.Errorf("ann's chat after hers ended = %d %s", code, raw)
	}
}
