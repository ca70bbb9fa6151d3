package adaptbot_test

import (
	"encoding/json"
	"testing"

	"adaptbot"
)

// TestExampleWire: an example travels and is stored (examples.json, the
// API's example reports) as {"input", "contains", "matches", "http"}, the
// last three left out when empty, and reads back as it was written; an
// exchange is {"request": {"method", "url", "body"}, "response":
// {"status", "headers", "body"}}.
func TestExampleWire(t *testing.T) {
	for _, tt := range []struct {
		ex   adaptbot.Example
		want string
	}{
		{adaptbot.Example{Input: json.RawMessage(`{"a":1}`), Contains: "c", Matches: "m"}, `{"input":{"a":1},"contains":"c","matches":"m"}`},
		{adaptbot.Example{Input: json.RawMessage(`{}`)}, `{"input":{}}`},
		{adaptbot.Example{Input: json.RawMessage(`{}`), Contains: "ok", HTTP: []adaptbot.Exchange{{
			Request:  adaptbot.ExchangeRequest{Method: "POST", URL: "https://h.example.org/{{secret:HOOK}}", Body: `{"a":1}`},
			Response: adaptbot.ExchangeResponse{Status: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: "{}"},
		}}}, `{"input":{},"contains":"ok","http":[{"request":{"method":"POST","url":"https://h.example.org/{{secret:HOOK}}","body":"{\"a\":1}"},"response":{"status":201,"headers":{"Content-Type":"application/json"},"body":"{}"}}]}`},
	} {
		got, err := json.Marshal(tt.ex)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Marshal = %s, want %s", got, tt.want)
		}
		var back adaptbot.Example
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(back); string(back.Input) != string(tt.ex.Input) || back.Contains != tt.ex.Contains || back.Matches != tt.ex.Matches || string(again) != tt.want {
			t.Errorf("round trip = %+v, want %+v", back, tt.ex)
		}
	}
}
