// Package http_private fetches from 10.0.0.1, which the egress policy refuses.
package http_private

import (
	"context"

	"adaptbot/toolkit"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return toolkit.Get(ctx, "http://10.0.0.1/latest/meta-data/")
}
