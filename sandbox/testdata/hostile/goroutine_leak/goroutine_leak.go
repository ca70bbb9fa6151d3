// Package goroutine_leak returns at once but leaves a goroutine running.
package goroutine_leak

import (
	"context"
	"time"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	go func() {
		for {
			time.Sleep(time.Millisecond)
		}
	}()
	return "returned, goroutine still running", nil
}
