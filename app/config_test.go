package main

import (
	"strings"
	"testing"

	"adaptbot/sandbox"
)

func TestConfigLandlock(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want sandbox.Landlock
		err  string
	}{
		{env: nil, want: sandbox.LandlockAuto},
		{env: map[string]string{"ADAPTBOT_SANDBOX_LANDLOCK": "require"}, want: sandbox.LandlockRequire},
		{env: map[string]string{"ADAPTBOT_SANDBOX_LANDLOCK": "OFF"}, want: sandbox.LandlockOff},
		{env: map[string]string{"ADAPTBOT_SANDBOX_LANDLOCK": "yes"}, err: `ADAPTBOT_SANDBOX_LANDLOCK="yes": use auto, require or off`},
		{env: map[string]string{"ADAPTBOT_SANDBOX_LANDLOCK": "require", "ADAPTBOT_SANDBOX": "inprocess"}, err: "needs ADAPTBOT_SANDBOX=workers"},
	} {
		c, err := loadConfig(func(k string) string { return tt.env[k] })
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.env, err, tt.err)
			}
			continue
		}
		if err != nil || c.Landlock != tt.want {
			t.Errorf("%v: %q, %v; want %q", tt.env, c.Landlock, err, tt.want)
		}
	}
}

func TestConfigMaxCallDepth(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want int
		err  string
	}{
		{"", 4, ""},
		{"2", 2, ""},
		{"0", 0, "ADAPTBOT_MAX_CALL_DEPTH"},
		{"deep", 0, "ADAPTBOT_MAX_CALL_DEPTH"},
	} {
		c, err := loadConfig(func(k string) string {
			if k == "ADAPTBOT_MAX_CALL_DEPTH" {
				return tt.v
			}
			return ""
		})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one naming %s", tt.v, err, tt.err)
			}
			continue
		}
		if err != nil || c.MaxCallDepth != tt.want {
			t.Errorf("%q: %d, %v; want %d", tt.v, c.MaxCallDepth, err, tt.want)
		}
	}
}
