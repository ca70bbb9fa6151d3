package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"
)

// EdgeConfig is what the HTTP edge enforces: the sizes and rates of the
// work it accepts, and which hosts and origins it answers.
type EdgeConfig struct {
	// MaxMessage is the longest chat message, in bytes (ADAPTBOT_MAX_MESSAGE).
	MaxMessage int
	// MaxInflight is how many chats and builds run at once
	// (ADAPTBOT_MAX_INFLIGHT).
	MaxInflight int
	// Rate is how many chats and builds one client address may start per
	// Per (ADAPTBOT_RATE_LIMIT); 0 means no limit.
	Rate int
	Per  time.Duration
	// AllowedOrigins are origins besides the server's own whose pages may
	// call it (ADAPTBOT_ALLOWED_ORIGINS).
	AllowedOrigins []string
	// AllowedHosts are Host names the server answers to besides loopback
	// and its listen host (ADAPTBOT_ALLOWED_HOSTS).
	AllowedHosts []string
}

// Defaults of the edge's limits. service.MaxHistory caps the history a
// message may carry.
const (
	defaultMaxMessage  = 32 << 10
	defaultMaxInflight = 64
	// 60 chats a minute is more than a person types, and caps a runaway
	// script at about 600 model calls a minute (a chat makes up to ~10).
	defaultRate = 60
	defaultPer  = time.Minute
	// busyRetryAfter is the Retry-After of a 503 for too many chats at once:
	// about what a chat takes.
	busyRetryAfter = 5 * time.Second
)

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
		return defaultRate, defaultPer, nil
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

// bodyLimit is the largest request body: room for a longest message with a
// history, and never below 1 MiB (tool arguments, builds).
func (e EdgeConfig) bodyLimit() int {
	return max(1<<20, 4*e.MaxMessage)
}

// limits holds the edge's counters: the rate limiter and the in-flight slots.
type limits struct {
	rate  fiber.Handler
	slots chan struct{}
}

func newLimits(e EdgeConfig, key func(*fiber.Ctx) string) *limits {
	l := &limits{slots: make(chan struct{}, max(e.MaxInflight, 1))}
	if e.Rate > 0 {
		l.rate = limiter.New(limiter.Config{
			Max:               e.Rate,
			Expiration:        e.Per,
			LimiterMiddleware: limiter.SlidingWindow{},
			KeyGenerator:      key,
			LimitReached: func(c *fiber.Ctx) error {
				return &apiError{Status: fiber.StatusTooManyRequests, Msg: fmt.Sprintf(
					"too many chats and builds from you: the limit is %d per %s (ADAPTBOT_RATE_LIMIT); try again in %s seconds",
					e.Rate, perName(e.Per), c.GetRespHeader(fiber.HeaderRetryAfter))}
			},
		})
	}
	return l
}

func perName(d time.Duration) string {
	switch d {
	case time.Second:
		return "second"
	case time.Hour:
		return "hour"
	}
	return "minute"
}

// rateLimit guards the routes that start model work (chats and builds):
// each client address gets ADAPTBOT_RATE_LIMIT of them. admit then takes an
// in-flight slot.
func (l *limits) rateLimit() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if l.rate != nil {
			// The limiter calls the rest of the chain itself when the
			// client is under its rate.
			return l.rate(c)
		}
		return c.Next()
	}
}

// admit takes an in-flight slot for the request, or answers 503.
func (l *limits) admit() fiber.Handler {
	return func(c *fiber.Ctx) error {
		select {
		case l.slots <- struct{}{}:
		default:
			return &apiError{Status: fiber.StatusServiceUnavailable, RetryAfter: busyRetryAfter,
				Msg: fmt.Sprintf("the server is busy with %d chats and builds (ADAPTBOT_MAX_INFLIGHT); try again in a few seconds", cap(l.slots))}
		}
		var once sync.Once
		release := func() { once.Do(func() { <-l.slots }) }
		c.Locals(slotKey{}, release)
		err := c.Next()
		if held, _ := c.Locals(heldKey{}).(bool); !held {
			release()
		}
		return err
	}
}

type slotKey struct{}
type heldKey struct{}

// holdSlot is for a handler that answers with a stream: the in-flight slot
// stays taken after the handler returns, until the stream calls the
// returned function. Without a slot it returns a no-op.
func holdSlot(c *fiber.Ctx) (release func()) {
	r, ok := c.Locals(slotKey{}).(func())
	if !ok {
		return func() {}
	}
	c.Locals(heldKey{}, true)
	return r
}

// edgeDefaults fills what a Config built by hand (in tests) leaves out, so
// that the edge never runs without limits.
func (c Config) edgeDefaults() Config {
	if c.Edge.MaxMessage <= 0 {
		c.Edge.MaxMessage = defaultMaxMessage
	}
	if c.Edge.MaxInflight <= 0 {
		c.Edge.MaxInflight = defaultMaxInflight
	}
	return c
}
