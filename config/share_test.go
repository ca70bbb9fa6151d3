package config

import (
	"strings"
	"testing"
)

// TestInflightPerUser reads ADAPTBOT_MAX_INFLIGHT_PER_USER as a share of
// ADAPTBOT_MAX_INFLIGHT or a number of slots: at least one slot, never
// more than the server has.
func TestInflightPerUser(t *testing.T) {
	tests := []struct {
		inflight, perUser string
		want              int
	}{
		{"", "", 16},     // a quarter of 64
		{"4", "", 1},     // a quarter of 4
		{"2", "", 1},     // a quarter of 2 is still one slot
		{"10", "50%", 5}, // a half
		{"10", "3", 3},   // slots
		{"2", "5", 2},    // no more than the server has
		{"3", "100%", 3}, // off, in effect
	}
	for _, tt := range tests {
		env := map[string]string{"ADAPTBOT_MAX_INFLIGHT": tt.inflight, "ADAPTBOT_MAX_INFLIGHT_PER_USER": tt.perUser}
		c, err := Load(func(k string) string { return env[k] })
		if got := c.Edge.PerUserSlots(); err != nil || got != tt.want {
			t.Errorf("MAX_INFLIGHT=%q PER_USER=%q: %d slots, %v; want %d", tt.inflight, tt.perUser, got, err, tt.want)
		}
	}
	for _, bad := range []string{"0", "-1", "0%", "101%", "a quarter", "25 %%"} {
		_, err := Load(func(k string) string { return map[string]string{"ADAPTBOT_MAX_INFLIGHT_PER_USER": bad}[k] })
		if err == nil || !strings.Contains(err.Error(), "ADAPTBOT_MAX_INFLIGHT_PER_USER") {
			t.Errorf("%q: %v; want an error naming the setting", bad, err)
		}
	}
}
