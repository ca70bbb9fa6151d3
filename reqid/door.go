package reqid

import (
	"context"

	"adaptbot"
)

type doorKey struct{}

// WithDoor returns ctx saying which door a request came through
// (adaptbot.DoorHTTP, DoorMCP, DoorCLI, DoorOpenAI, DoorInternal); its row
// records it.
func WithDoor(ctx context.Context, door string) context.Context {
	return context.WithValue(ctx, doorKey{}, door)
}

// DoorOf returns the door ctx names, or adaptbot.DoorHTTP.
func DoorOf(ctx context.Context) string {
	if d, ok := ctx.Value(doorKey{}).(string); ok && d != "" {
		return d
	}
	return adaptbot.DoorHTTP
}
