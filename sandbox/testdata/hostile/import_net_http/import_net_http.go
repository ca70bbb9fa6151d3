// Package import_net_http imports net/http, which tools may not.
package import_net_http

import (
	"context"
	http "net/http"
)

var _ = http.Get

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "imported net/http", nil
}
