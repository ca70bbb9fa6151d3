package current_time

import (
	"context"
	"strings"
	"testing"
	"time"

	"adaptbot/contract/contracttest"
)

// at fixes the clock for one test.
func at(t *testing.T, utc string) {
	t.Helper()
	fixed, err := time.Parse(time.RFC3339, utc)
	if err != nil {
		t.Fatal(err)
	}
	saved := now
	now = func() time.Time { return fixed }
	t.Cleanup(func() { now = saved })
}

func TestExecute(t *testing.T) {
	tests := []struct {
		clock    string // the instant, in UTC
		timezone string
		want     Output
	}{
		{"2025-01-15T14:04:05Z", "", Output{
			Timezone: "UTC", Abbreviation: "UTC", Weekday: "Wednesday", Date: "2025-01-15", Time: "14:04:05",
			ISO8601: "2025-01-15T14:04:05Z", UTCOffset: "+00:00",
			Text: "It is Wednesday, 15 January 2025, 14:04:05 in UTC (UTC+00:00).",
		}},
		{"2025-01-15T14:04:05Z", "Europe/Paris", Output{
			Timezone: "Europe/Paris", Abbreviation: "CET", Weekday: "Wednesday", Date: "2025-01-15", Time: "15:04:05",
			ISO8601: "2025-01-15T15:04:05+01:00", UTCOffset: "+01:00",
			Text: "It is Wednesday, 15 January 2025, 15:04:05 in Europe/Paris (CET, UTC+01:00).",
		}},
		{"2025-07-04T12:00:00Z", "Europe/Paris", Output{
			Timezone: "Europe/Paris", Abbreviation: "CEST", Weekday: "Friday", Date: "2025-07-04", Time: "14:00:00",
			ISO8601: "2025-07-04T14:00:00+02:00", UTCOffset: "+02:00", DST: true,
			Text: "It is Friday, 4 July 2025, 14:00:00 in Europe/Paris (CEST, UTC+02:00).",
		}},
		{"2025-01-15T03:30:00Z", "America/New_York", Output{
			Timezone: "America/New_York", Abbreviation: "EST", Weekday: "Tuesday", Date: "2025-01-14", Time: "22:30:00",
			ISO8601: "2025-01-14T22:30:00-05:00", UTCOffset: "-05:00",
			Text: "It is Tuesday, 14 January 2025, 22:30:00 in America/New_York (EST, UTC-05:00).",
		}},
		{"2025-01-15T14:04:05Z", "Australia/Sydney", Output{
			Timezone: "Australia/Sydney", Abbreviation: "AEDT", Weekday: "Thursday", Date: "2025-01-16", Time: "01:04:05",
			ISO8601: "2025-01-16T01:04:05+11:00", UTCOffset: "+11:00", DST: true,
			Text: "It is Thursday, 16 January 2025, 01:04:05 in Australia/Sydney (AEDT, UTC+11:00).",
		}},
		{"2025-01-15T14:04:05Z", "Asia/Dubai", Output{
			Timezone: "Asia/Dubai", Abbreviation: "+04", Weekday: "Wednesday", Date: "2025-01-15", Time: "18:04:05",
			ISO8601: "2025-01-15T18:04:05+04:00", UTCOffset: "+04:00",
			Text: "It is Wednesday, 15 January 2025, 18:04:05 in Asia/Dubai (UTC+04:00).",
		}},
		{"2025-01-15T14:04:05Z", "UTC+5:30", Output{
			Timezone: "UTC+05:30", Abbreviation: "UTC+05:30", Weekday: "Wednesday", Date: "2025-01-15", Time: "19:34:05",
			ISO8601: "2025-01-15T19:34:05+05:30", UTCOffset: "+05:30",
			Text: "It is Wednesday, 15 January 2025, 19:34:05 in UTC+05:30.",
		}},
	}
	for _, tt := range tests {
		at(t, tt.clock)
		got, err := Execute(context.Background(), Input{Timezone: tt.timezone})
		if err != nil {
			t.Errorf("Execute(%q) at %s error: %v", tt.timezone, tt.clock, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Execute(%q) at %s\n got %+v\nwant %+v", tt.timezone, tt.clock, got, tt.want)
		}
		contracttest.CheckResult(t, "current_time", got)
	}
}

func TestZoneNames(t *testing.T) {
	at(t, "2025-01-15T14:04:05Z")
	tests := []struct {
		timezone    string
		wantZone    string
		wantISO8601 string
		wantAbbr    string
	}{
		{"UTC", "UTC", "2025-01-15T14:04:05Z", "UTC"},
		{"  utc ", "UTC", "2025-01-15T14:04:05Z", "UTC"},
		{"Z", "UTC", "2025-01-15T14:04:05Z", "UTC"},
		{"Zulu", "UTC", "2025-01-15T14:04:05Z", "UTC"},
		{"GMT", "GMT", "2025-01-15T14:04:05Z", "GMT"},
		{"gmt", "GMT", "2025-01-15T14:04:05Z", "GMT"},
		{"asia/kolkata", "Asia/Kolkata", "2025-01-15T19:34:05+05:30", "IST"},
		{"America/New York", "America/New_York", "2025-01-15T09:04:05-05:00", "EST"},
		{"america/los_angeles", "America/Los_Angeles", "2025-01-15T06:04:05-08:00", "PST"},
		{"America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires", "2025-01-15T11:04:05-03:00", "-03"},
		{"GMT-3", "UTC-03:00", "2025-01-15T11:04:05-03:00", "UTC-03:00"},
		{"UTC -03:30", "UTC-03:30", "2025-01-15T10:34:05-03:30", "UTC-03:30"},
		{"+0545", "UTC+05:45", "2025-01-15T19:49:05+05:45", "UTC+05:45"},
		{"UTC+14", "UTC+14:00", "2025-01-16T04:04:05+14:00", "UTC+14:00"},
		{"UTC+0", "UTC", "2025-01-15T14:04:05Z", "UTC"},
	}
	for _, tt := range tests {
		got, err := Execute(context.Background(), Input{Timezone: tt.timezone})
		if err != nil {
			t.Errorf("Execute(%q) error: %v", tt.timezone, err)
			continue
		}
		if got.Timezone != tt.wantZone || got.ISO8601 != tt.wantISO8601 || got.Abbreviation != tt.wantAbbr {
			t.Errorf("Execute(%q) = zone %q, %s, %q; want zone %q, %s, %q", tt.timezone,
				got.Timezone, got.ISO8601, got.Abbreviation, tt.wantZone, tt.wantISO8601, tt.wantAbbr)
		}
	}
}

func TestExecuteErrors(t *testing.T) {
	at(t, "2025-01-15T14:04:05Z")
	tests := []struct {
		timezone string
		wantErr  string
	}{
		{"Mars/Olympus_Mons", `unknown time zone "Mars/Olympus_Mons": use an IANA name in Area/City form`},
		{"Paris", `unknown time zone "Paris"`},
		{"EST", `"EST" is an abbreviation`},
		{"pst", `"pst" is an abbreviation`},
		{"IST", "use an IANA name in Area/City form"},
		{"Local", `unknown time zone "Local"`},
		{"../../etc/passwd", "unknown time zone"},
		{"/etc/localtime", "unknown time zone"},
		{"UTC+15", "out of range"},
		{"UTC+5:75", "out of range"},
		{strings.Repeat("Europe/", 20), "too long"},
	}
	for _, tt := range tests {
		got, err := Execute(context.Background(), Input{Timezone: tt.timezone})
		if err == nil {
			t.Errorf("Execute(%q) = %+v, want an error", tt.timezone, got)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Execute(%q) error = %q, want it to contain %q", tt.timezone, err, tt.wantErr)
		}
	}
}

func TestContract(t *testing.T) {
	// No required parameter: the zone defaults to UTC.
	contracttest.Check(t, "current_time", contracttest.Want{
		Category:    "time",
		Description: "Tells the current date and time",
		Properties:  map[string]string{"timezone": "string"},
		Output: map[string]string{
			"timezone": "string", "abbreviation": "string", "weekday": "string", "date": "string", "time": "string",
			"iso8601": "string", "utc_offset": "string", "dst": "boolean", "text": "string",
		},
	})
}
