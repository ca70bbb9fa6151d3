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
