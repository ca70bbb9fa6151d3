// Package log_fatal tries to end the process through log.Fatal.
package log_fatal

import (
	"context"
	"log"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	log.Fatal("bye")
	return 0, nil
}
