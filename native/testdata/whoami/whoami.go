// Package whoami describes its own input's type with fmt's %T. The
// interpreter builds a tool's types at run time, without the names a
// compiler gives them, so the same source prints one thing interpreted and
// another native: an honest difference the differential check must catch.
package whoami

import (
	"context"
	"fmt"
)

// Input is anything.
type Input struct {
	Text string `json:"text"`
}

// Execute names the type of in.
func Execute(ctx context.Context, in Input) (string, error) {
	return fmt.Sprintf("%T", in), nil
}
