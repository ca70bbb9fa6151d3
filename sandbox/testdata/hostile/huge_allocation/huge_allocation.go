// Package huge_allocation asks for a terabyte at once.
package huge_allocation

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	b := make([]byte, 1<<40)
	b[len(b)-1] = 1
	return len(b), nil
}
