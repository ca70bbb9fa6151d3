// Package memory_bomb keeps allocating and holding memory.
package memory_bomb

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	var hold [][]byte
	for {
		b := make([]byte, 4<<20)
		b[len(b)-1] = 1
		hold = append(hold, b)
	}
	return len(hold), nil
}
