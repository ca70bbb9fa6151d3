// Package chaos_act acts on a system outside, as a tool that sends a
// message or books a room does: it tells the fault suite's witness that it
// ran, then works a while, so that a fleet worker can be killed mid-call.
package chaos_act

import (
	"context"
	"time"

	"adaptbot/toolkit"
)

// Category is the tool's domain.
const Category = "text"

// Input says where the witness is, names the call, and how long to work.
type Input struct {
	URL   string `json:"url" jsonschema:"the witness's address"`
	Token string `json:"token" jsonschema:"names this call"`
	MS    int    `json:"ms" jsonschema:"how long to work after acting, in milliseconds"`
}

// Execute acts once, then works in.MS milliseconds.
func Execute(ctx context.Context, in Input) (string, error) {
	if _, err := toolkit.Get(ctx, in.URL+"?token="+toolkit.QueryEscape(in.Token)); err != nil {
		return "", err
	}
	select {
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "acted " + in.Token, nil
}
