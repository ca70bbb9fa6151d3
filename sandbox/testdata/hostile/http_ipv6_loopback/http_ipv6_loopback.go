// Package http_ipv6_loopback fetches from [::1], which the egress policy refuses.
package http_ipv6_loopback

import (
	"context"

	"adaptbot/toolkit"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return toolkit.Get(ctx, "http://[::1]/latest/meta-data/")
}
