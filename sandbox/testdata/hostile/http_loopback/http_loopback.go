// Package http_loopback fetches from 127.0.0.1, which the egress policy refuses.
package http_loopback

import (
	"context"

	"adaptbot/toolkit"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return toolkit.Get(ctx, "http://127.0.0.1/latest/meta-data/")
}
