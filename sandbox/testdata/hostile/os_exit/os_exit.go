// Package os_exit tries to end the process.
package os_exit

import (
	"context"
	"os"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	os.Exit(3)
	return 0, nil
}
