// Package panics panics in Execute.
package panics

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	var m map[string]int
	if len(m) == 0 {
		panic("boom from a hostile tool")
	}
	return 0, nil
}
