// Package current_time tells the current date and time in a time zone: the
// weekday, the date, the clock time, the full ISO-8601 timestamp, the UTC offset
// and whether daylight saving time is in effect. Zones are IANA names such as
// Europe/Paris, America/New_York or Asia/Kolkata (case and spaces for
// underscores are forgiven); UTC, GMT and fixed offsets such as UTC+5:30 are
// also accepted. Abbreviations such as EST, PST or IST are not, because they
// are ambiguous or ignore daylight saving time; pass the Area/City name. Use it whenever the answer
// depends on today's date or the time somewhere.
package current_time

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Category is the tool's domain.
const Category = "time"

// Input names the time zone.
type Input struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone in Area/City form, e.g. Europe/Paris, America/New_York, Asia/Tokyo; or UTC, GMT, UTC+5:30. Default UTC"`
}

// Output is the current time in the requested zone.
type Output struct {
	Timezone     string `json:"timezone"`     // the zone's name, e.g. Europe/Paris
	Abbreviation string `json:"abbreviation"` // e.g. CET, CEST, EST; or the offset where the zone has none
	Weekday      string `json:"weekday"`      // e.g. Monday
	Date         string `json:"date"`         // YYYY-MM-DD
	Time         string `json:"time"`         // HH:MM:SS, 24-hour clock
	ISO8601      string `json:"iso8601"`      // e.g. 2025-01-15T15:04:05+01:00
	UTCOffset    string `json:"utc_offset"`   // e.g. +01:00
	DST          bool   `json:"dst"`          // daylight saving time is in effect
	Text         string `json:"text"`         // the whole answer as a sentence
}

// now is the clock; tests replace it.
var now = time.Now

// Execute returns the current time in in.Timezone, or in UTC if it is empty.
func Execute(ctx context.Context, in Input) (Output, error) {
	loc, err := location(in.Timezone)
	if err != nil {
		return Output{}, err
	}
	t := now().In(loc)
	abbr, _ := t.Zone()
	offset := t.Format("-07:00")
	out := Output{
		Timezone:     loc.String(),
		Abbreviation: abbr,
		Weekday:      t.Weekday().String(),
		Date:         t.Format("2006-01-02"),
		Time:         t.Format("15:04:05"),
		ISO8601:      t.Format(time.RFC3339),
		UTCOffset:    offset,
		DST:          t.IsDST(),
	}
	out.Text = fmt.Sprintf("It is %s, %s, %s in %s%s.",
		out.Weekday, t.Format("2 January 2006"), out.Time, out.Timezone, aside(out.Timezone, abbr, offset))
	return out, nil
}

// aside is the " (CET, UTC+01:00)" after the zone's name, leaving out what
// the name already says and numeric abbreviations such as "+04".
func aside(zone, abbr, offset string) string {
	utc := "UTC" + offset
	if zone == utc {
		return ""
	}
	if abbr == zone || abbr == utc || strings.HasPrefix(abbr, "+") || strings.HasPrefix(abbr, "-") {
		return " (" + utc + ")"
	}
	return " (" + abbr + ", " + utc + ")"
}

// aliases are the only non-IANA names accepted: each means one thing.
var aliases = map[string]string{
	"":                           "UTC",
	"utc":                        "UTC",
	"z":                          "UTC",
	"zulu":                       "UTC",
	"coordinated universal time": "UTC",
	"gmt":                        "GMT",
	"greenwich mean time":        "GMT",
}

// fixedOffset matches UTC+2, GMT-03:30, +0530 and the like.
var fixedOffset = regexp.MustCompile(`^(?:utc|gmt)?\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?$`)

// abbreviation matches zone abbreviations such as EST, PST or CET.
var abbreviation = regexp.MustCompile(`^[A-Za-z]{2,4}$`)

// location resolves a zone name.
func location(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	key := strings.ToLower(name)
	if canonical, ok := aliases[key]; ok {
		return time.LoadLocation(canonical)
	}
	if m := fixedOffset.FindStringSubmatch(key); m != nil {
		return offsetZone(m[1], m[2], m[3])
	}
	if key == "local" {
		// time.LoadLocation("Local") would reveal the server's own zone.
		return nil, unknownZone(name)
	}
	if abbreviation.MatchString(name) {
		// tzdata knows EST and MST, but as fixed offsets that ignore daylight
		// saving time, which is rarely what someone who says "EST" means.
		return nil, fmt.Errorf("%q is an abbreviation, which can mean different zones or ignore daylight saving time: use an IANA name in Area/City form, such as America/New_York, Europe/Berlin or Asia/Kolkata", name)
	}
	if len(name) > 64 {
		return nil, fmt.Errorf("time zone name is too long (%d characters)", len(name))
	}
	for _, candidate := range []string{name, titleCase(name)} {
		if loc, err := time.LoadLocation(candidate); err == nil {
			return loc, nil
		}
	}
	return nil, unknownZone(name)
}

func unknownZone(name string) error {
	return fmt.Errorf("unknown time zone %q: use an IANA name in Area/City form, such as Europe/London, America/New_York, America/Los_Angeles, Asia/Tokyo or Australia/Sydney (or UTC, or an offset such as UTC+5:30)", name)
}

// offsetZone makes the fixed zone for sign, hours and minutes.
func offsetZone(sign, hours, minutes string) (*time.Location, error) {
	h, _ := strconv.Atoi(hours)
	m := 0
	if minutes != "" {
		m, _ = strconv.Atoi(minutes)
	}
	if h > 14 || m > 59 || (h == 14 && m > 0) {
		return nil, fmt.Errorf("UTC offset %s%s:%02d is out of range; offsets run from -12:00 to +14:00", sign, hours, m)
	}
	secs := h*3600 + m*60
	if sign == "-" {
		secs = -secs
	}
	name := fmt.Sprintf("UTC%s%02d:%02d", sign, h, m)
	if secs == 0 {
		name = "UTC"
	}
	return time.FixedZone(name, secs), nil
}

// titleCase rewrites "america/new york" as "America/New_York", the way most
// zone names are spelled. Names with lower-case inner words (Port-au-Prince)
// must be typed as they are.
func titleCase(name string) string {
	name = strings.Join(strings.Fields(name), "_")
	b := []byte(strings.ToLower(name))
	upper := true
	for i, c := range b {
		if upper && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		upper = c == '/' || c == '_' || c == '-'
	}
	return string(b)
}
