package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"adaptbot/web"
)

// The parsers of the settings' values: each says what it wants in a
// user's terms, and Load adds the variable's name and value.

// wholeNumber parses a number ≥ 0.
func wholeNumber(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errors.New("want a whole number ≥ 0")
	}
	return n, nil
}

// duration parses a duration > 0.
func duration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errors.New("want a duration such as 10s")
	}
	return d, nil
}

// oneOf returns v in lower case if it is one of choices.
func oneOf(v string, choices ...string) (string, error) {
	v = strings.ToLower(v)
	for _, c := range choices {
		if v == c {
			return v, nil
		}
	}
	var named []string
	for _, c := range choices {
		if c != "" {
			named = append(named, c)
		}
	}
	return v, fmt.Errorf("use %s", strings.Join(named, ", "))
}

// origins reads ADAPTBOT_ALLOWED_ORIGINS: lower case, no trailing slash.
func origins(v string) []string {
	return list(v, func(s string) string { return strings.TrimSuffix(s, "/") })
}

// hosts reads ADAPTBOT_ALLOWED_HOSTS: lower case, IPv6 without brackets.
func hosts(v string) []string {
	return list(v, func(s string) string { return strings.Trim(s, "[]") })
}

// list splits a comma-separated setting into lower-case items.
func list(v string, clean func(string) string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = clean(strings.ToLower(strings.TrimSpace(s))); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// positive parses a whole number ≥ 1.
func positive(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errors.New("want a whole number ≥ 1")
	}
	return n, nil
}

// parseSize reads a size in bytes: 32768, 32KiB, 32K, 1MiB, 1M. Empty is 0.
func parseSize(v string) (int, error) {
	v = strings.TrimSpace(strings.ToLower(v))
	if v == "" {
		return 0, nil
	}
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"kib", 1 << 10}, {"kb", 1 << 10}, {"k", 1 << 10}, {"mib", 1 << 20}, {"mb", 1 << 20}, {"m", 1 << 20}, {"b", 1}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errors.New("want a size such as 32768, 32KiB or 1MiB")
	}
	return n * mult, nil
}

// parseRate reads N/s, N/min or N/hour; empty is the default and "off" is
// no limit (0).
func parseRate(v string) (int, time.Duration, error) {
	v = strings.TrimSpace(strings.ToLower(v))
	switch v {
	case "":
		return web.DefaultRate, web.DefaultPer, nil
	case "off", "0", "none":
		return 0, 0, nil
	}
	num, unit, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if !ok || err != nil || n < 1 {
		return 0, 0, errRate
	}
	switch strings.TrimSpace(unit) {
	case "s", "sec", "second":
		return n, time.Second, nil
	case "m", "min", "minute":
		return n, time.Minute, nil
	case "h", "hour":
		return n, time.Hour, nil
	}
	return 0, 0, errRate
}

var errRate = errors.New("want N/s, N/min or N/hour (e.g. 60/min), or off")

// parseShare reads a share of a limit, N% (1 to 100), or a number of
// slots N ≥ 1: one of slots and percent is set. Empty is the default share.
func parseShare(v string) (slots, percent int, err error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, web.DefaultInflightShare, nil
	}
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 100 {
			return 0, 0, errShare
		}
		return 0, n, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, 0, errShare
	}
	return n, 0, nil
}

var errShare = errors.New("want a share such as 25% (1% to 100%) or a number of slots ≥ 1")
