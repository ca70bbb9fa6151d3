// Package import_net imports net, which tools may not.
package import_net

import (
	"context"
	net "net"
)

var _ = net.Dial

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "imported net", nil
}
