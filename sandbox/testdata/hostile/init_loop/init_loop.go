// Package init_loop never finishes loading: its init function loops.
package init_loop

import "context"

var ready bool

func init() {
	for !ready {
	}
}

type Input struct{}

func Execute(ctx context.Context, in Input) (bool, error) {
	return ready, nil
}
