// Package import_os_exec imports os/exec, which tools may not.
package import_os_exec

import (
	"context"
	exec "os/exec"
)

var _ = exec.Command

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "imported os/exec", nil
}
