// Package import_plugin imports plugin, which tools may not.
package import_plugin

import (
	"context"
	plugin "plugin"
)

var _ = plugin.Open

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "imported plugin", nil
}
