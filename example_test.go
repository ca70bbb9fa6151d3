package adaptbot_test

import (
	"encoding/json"
	"testing"

	"adaptbot"
)

// TestExampleWire: an example travels and is stored (examples.json, the
// API's example reports) as {"input", "contains", "matches"}, the last two
// left out when empty, and reads back as it was written.
func TestExampleWire(t *testing.T) {
	for _, tt := range []struct {
		ex   adaptbot.Example
		want string
	}{
		{adaptbot.Example{Input: json.RawMessage(`{"a":1}`), Contains: "c", Matches: "m"}, `{"input":{"a":1},"contains":"c","matches":"m"}`},
		{adaptbot.Example{Input: json.RawMessage(`{}`)}, `{"input":{}}`},
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
		if string(back.Input) != string(tt.ex.Input) || back.Contains != tt.ex.Contains || back.Matches != tt.ex.Matches {
			t.Errorf("round trip = %+v, want %+v", back, tt.ex)
		}
	}
}
