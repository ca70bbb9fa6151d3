// Package import_unsafe imports unsafe, which tools may not.
package import_unsafe

import (
	"context"
	unsafe "unsafe"
)

var _ = unsafe.Sizeof

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "imported unsafe", nil
}
