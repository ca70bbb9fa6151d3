package agent

import (
	"context"
	"errors"
)

// ErrForbidden is returned for a message that would create, modify or
// delete a tool when its caller may not change tools. Nothing is built or
// deleted; the Result's Response says why.
var ErrForbidden = errors.New("changing tools needs the admin token: send Authorization: Bearer <ADAPTBOT_ADMIN_TOKEN>")

type changesKey struct{}

// AllowChanges returns ctx saying whether its caller may create, modify or
// delete tools. The HTTP edge sets it from the same authorization check
// every other door uses.
func AllowChanges(ctx context.Context, ok bool) context.Context {
	return context.WithValue(ctx, changesKey{}, ok)
}

// ChangesAllowed reports whether ctx's caller may change tools. A context
// that does not say is refused: the check fails closed.
func ChangesAllowed(ctx context.Context) bool {
	ok, _ := ctx.Value(changesKey{}).(bool)
	return ok
}
