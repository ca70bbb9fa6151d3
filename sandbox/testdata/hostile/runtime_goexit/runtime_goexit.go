// Package runtime_goexit tries to end its goroutine through the runtime.
package runtime_goexit

import (
	"context"
	"runtime"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	runtime.Goexit()
	return 0, nil
}
