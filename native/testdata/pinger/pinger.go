// Package pinger tells a service outside that it ran, with a GET: a tool
// whose request may change something even though it only reads (a counter
// bumped, a message marked read).
package pinger

import (
	"context"
	"strings"

	"adaptbot/toolkit"
)

// Input names the ping.
type Input struct {
	Text string `json:"text"`
}

// Execute pings once and answers what the service said, in capitals.
func Execute(ctx context.Context, in Input) (string, error) {
	body, err := toolkit.Get(ctx, "https://witness.example/ping?text="+toolkit.QueryEscape(in.Text))
	if err != nil {
		return "", err
	}
	return strings.ToUpper(body), nil
}
