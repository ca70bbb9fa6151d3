// Package sleep_past_timeout sleeps for an hour and ignores its context.
package sleep_past_timeout

import (
	"context"
	"time"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	time.Sleep(time.Hour)
	return "woke up", nil
}
