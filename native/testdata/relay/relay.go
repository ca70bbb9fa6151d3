// Package relay hands its text to the host's tool gate and returns what the
// gate answers: a tool whose call acts outside its worker, as one that
// sends a request does.
package relay

import (
	"context"

	"adaptbot/toolkit"
)

// Input is the text to hand on.
type Input struct {
	Text string `json:"text"`
}

// Execute calls the gate once.
func Execute(ctx context.Context, in Input) (string, error) {
	return toolkit.Call(ctx, "gate", map[string]string{"text": in.Text})
}
