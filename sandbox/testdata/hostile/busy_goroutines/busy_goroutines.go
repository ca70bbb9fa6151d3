// Package busy_goroutines keeps every core busy from several goroutines.
package busy_goroutines

import "context"

type Input struct{}

func spin() {
	n := 0
	for {
		n++
	}
}

func Execute(ctx context.Context, in Input) (int, error) {
	for i := 0; i < 8; i++ {
		go spin()
	}
	spin()
	return 0, nil
}
