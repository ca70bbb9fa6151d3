package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"

	"adaptbot/config"
)

// The edge's limits on the work a client can start: the rate limit and the
// in-flight slots of ADAPTBOT_RATE_LIMIT and ADAPTBOT_MAX_INFLIGHT (read by
// package config).

// busyRetryAfter is the Retry-After of a 503 for too many chats at once:
// about what a chat takes.
const busyRetryAfter = 5 * time.Second

// limits holds the edge's counters: the rate limiter and the in-flight slots.
type limits struct {
	rate  fiber.Handler
	slots chan struct{}
}

// newLimits makes the counters of e, the rate limit counting by key.
func newLimits(e config.EdgeConfig, key func(*fiber.Ctx) string) *limits {
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
