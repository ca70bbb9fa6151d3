// Package import_reflect imports reflect, which tools may not.
package import_reflect

import (
	"context"
	reflect "reflect"
)

var _ = reflect.ValueOf

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "imported reflect", nil
}
