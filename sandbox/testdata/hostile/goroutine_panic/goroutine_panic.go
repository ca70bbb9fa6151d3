// Package goroutine_panic panics in a goroutine of its own, which no recover can catch.
package goroutine_panic

import (
	"context"
	"time"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	go func() {
		panic("fatal error: runtime: out of memory (a lie: this is a goroutine panic)")
	}()
	time.Sleep(5 * time.Second)
	return 0, nil
}
