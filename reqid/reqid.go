// Package reqid carries a request's ID in its context, so that the agent,
// model calls, sandbox calls and log lines can all name the request they
// serve, and the door it came through, which its row records.
package reqid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

type key struct{}

// New returns a fresh random request ID.
func New() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context { return context.WithValue(ctx, key{}, id) }

// From returns the request ID in ctx, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}
