// Package import_os imports os, which tools may not.
package import_os

import (
	"context"
	os "os"
)

var _ = os.Exit

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "imported os", nil
}
