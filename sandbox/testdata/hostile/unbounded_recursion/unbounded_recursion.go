// Package unbounded_recursion recurses until the stack gives out.
package unbounded_recursion

import "context"

type Input struct{}

func deeper(n int) int {
	return deeper(n+1) + 1
}

func Execute(ctx context.Context, in Input) (int, error) {
	return deeper(0), nil
}
