// Package redirect_to_private fetches from an allowed host that redirects to a private address.
package redirect_to_private

import (
	"context"

	"adaptbot/toolkit"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return toolkit.Get(ctx, "http://redirector.test/go")
}
