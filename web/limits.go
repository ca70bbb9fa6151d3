package web

import (
	"fmt"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"

	"adaptbot"
	"adaptbot/identity"
)

// The edge's limits on the work a client can start: the rate limit, the
// in-flight slots, and one identity's share of them, of
// ADAPTBOT_RATE_LIMIT, ADAPTBOT_MAX_INFLIGHT and
// ADAPTBOT_MAX_INFLIGHT_PER_USER (read by package config, which asks this
// package for their defaults).

// busyRetryAfter is the Retry-After of a 503 for too many chats at once:
// about what a chat takes.
const busyRetryAfter = 5 * time.Second

// Limits are what the edge enforces: the sizes and rates of the
// work it accepts, and which hosts and origins it answers.
type Limits struct {
	// MaxMessage is the longest chat message, in bytes (ADAPTBOT_MAX_MESSAGE).
	MaxMessage int
	// MaxInflight is how many chats and builds run at once
	// (ADAPTBOT_MAX_INFLIGHT).
	MaxInflight int
	// MaxInflightPerUser is how many of those one identity may hold
	// (ADAPTBOT_MAX_INFLIGHT_PER_USER): a number of slots, or, when 0,
	// InflightShare percent of MaxInflight. PerUserSlots says which.
	MaxInflightPerUser int
	// InflightShare is one identity's share of MaxInflight, in percent,
	// when MaxInflightPerUser is 0; 0 means the default, a quarter.
	InflightShare int
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

// Defaults of the edge's limits, for Limits built by hand and for the
// settings table (package config). adaptbot.MaxHistory caps the history a
// message may carry.
const (
	// DefaultMaxMessage is the longest chat message, in bytes.
	DefaultMaxMessage = 32 << 10
	// DefaultMaxInflight is how many chats and builds run at once.
	DefaultMaxInflight = 64
	// DefaultInflightShare is the share of the in-flight slots, in percent,
	// one person may hold: a quarter, so four people hogging at once still
	// leave none idle, and one alone cannot starve the rest.
	DefaultInflightShare = 25
	// DefaultRate per DefaultPer is how many chats and builds one caller
	// may start: 60 a minute is more than a person types, and caps a
	// runaway script at about 600 model calls a minute (a chat makes up to
	// ~10).
	DefaultRate = 60
	DefaultPer  = time.Minute
)

// WithDefaults fills what Limits built by hand (in tests) leave
// out, so that the edge never runs without limits.
func (e Limits) WithDefaults() Limits {
	if e.MaxMessage <= 0 {
		e.MaxMessage = DefaultMaxMessage
	}
	if e.MaxInflight <= 0 {
		e.MaxInflight = DefaultMaxInflight
	}
	return e
}

// PerUserSlots is how many chats and builds one identity may have under
// way at once: MaxInflightPerUser, or its share of MaxInflight, at least 1
// and at most MaxInflight.
func (e Limits) PerUserSlots() int {
	e = e.WithDefaults()
	n := e.MaxInflightPerUser
	if n <= 0 {
		share := e.InflightShare
		if share <= 0 {
			share = DefaultInflightShare
		}
		n = e.MaxInflight * share / 100
	}
	return min(max(n, 1), e.MaxInflight)
}

// BodyLimit is the largest request body: room for a longest message with a
// history, and never below 1 MiB (tool arguments, builds).
func (e Limits) BodyLimit() int {
	return max(1<<20, 4*e.MaxMessage)
}

// limits holds the edge's counters: the rate limiter, the in-flight slots
// and the slots each identity holds.
type limits struct {
	rate  fiber.Handler
	slots chan struct{}
	// perUser is how many slots one identity may hold.
	perUser int

	mu   sync.Mutex
	held map[string]int // slots held, by shareKey
}

// newLimits makes the counters of e, the rate limit counting by key.
func newLimits(e Limits, key func(*fiber.Ctx) string) *limits {
	l := &limits{slots: make(chan struct{}, max(e.MaxInflight, 1)), perUser: e.PerUserSlots(), held: map[string]int{}}
	if e.Rate > 0 {
		l.rate = limiter.New(limiter.Config{
			Max:               e.Rate,
			Expiration:        e.Per,
			LimiterMiddleware: limiter.SlidingWindow{},
			KeyGenerator:      key,
			LimitReached: func(c *fiber.Ctx) error {
				return &adaptbot.Error{Kind: adaptbot.Limited, Msg: fmt.Sprintf(
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

// admit takes an in-flight slot for the request, or answers 429 when its
// caller already holds their share of the slots, and 503 when none is free.
func (l *limits) admit() fiber.Handler {
	return func(c *fiber.Ctx) error {
		key := shareKey(identity.From(c.UserContext()))
		if !l.take(key) {
			return &adaptbot.Error{Kind: adaptbot.Limited, RetryAfter: busyRetryAfter,
				Msg: fmt.Sprintf("you already have %d chats and builds under way, your share of the server's %d (ADAPTBOT_MAX_INFLIGHT_PER_USER); try again when one of them ends", l.perUser, cap(l.slots))}
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.give(key)
			return &adaptbot.Error{Kind: adaptbot.Unavailable, RetryAfter: busyRetryAfter,
				Msg: fmt.Sprintf("the server is busy with %d chats and builds (ADAPTBOT_MAX_INFLIGHT); try again in a few seconds", cap(l.slots))}
		}
		var once sync.Once
		release := func() { once.Do(func() { <-l.slots; l.give(key) }) }
		c.Locals(slotKey{}, release)
		err := c.Next()
		if held, _ := c.Locals(heldKey{}).(bool); !held {
			release()
		}
		return err
	}
}

// shareKey is who a slot counts against: an identity's pseudonym, or its
// name without one. The one local user of a loopback server ("") has no
// share to keep: there is nobody else to starve.
func shareKey(who identity.Identity) string {
	switch {
	case who.Method == identity.Loopback:
		return ""
	case who.Pseudonym != "":
		return "id:" + who.Pseudonym
	}
	return "name:" + who.Name
}

// take counts a slot against key, unless key holds its share already.
func (l *limits) take(key string) bool {
	if key == "" {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key] >= l.perUser {
		return false
	}
	l.held[key]++
	return true
}

// give returns a slot key took.
func (l *limits) give(key string) {
	if key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key]--; l.held[key] <= 0 {
		delete(l.held, key) // the map holds only who holds a slot now
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
