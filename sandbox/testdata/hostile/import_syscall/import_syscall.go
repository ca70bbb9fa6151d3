// Package import_syscall imports syscall, which tools may not.
package import_syscall

import (
	"context"
	syscall "syscall"
)

var _ = syscall.Exit

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "imported syscall", nil
}
