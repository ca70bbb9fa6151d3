// Package infinite_loop never returns: a busy loop that ignores its context.
package infinite_loop

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	n := 0
	for {
		n++
	}
}
