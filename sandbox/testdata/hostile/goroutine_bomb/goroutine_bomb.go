// Package goroutine_bomb starts goroutines without end.
package goroutine_bomb

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	block := make(chan int)
	n := 0
	for {
		go func() { <-block }()
		n++
	}
	return n, nil
}
