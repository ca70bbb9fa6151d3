// Package output_100mib returns a 100 MiB result.
package output_100mib

import (
	"context"
	"strings"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return strings.Repeat("x", 100<<20), nil
}
