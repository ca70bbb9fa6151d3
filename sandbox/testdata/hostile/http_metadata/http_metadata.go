// Package http_metadata fetches from 169.254.169.254, which the egress policy refuses.
package http_metadata

import (
	"context"

	"adaptbot/toolkit"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return toolkit.Get(ctx, "http://169.254.169.254/latest/meta-data/")
}
