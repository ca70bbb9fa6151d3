package toolbox

import (
	"context"
	"errors"

	"adaptbot/sandbox"
)

// outcome names how a tool call ended, for its execute_tool span and its
// count in the metrics: "ok", "invalid_arguments", "not_found", the
// sandbox's kind of failure ("timeout", "tool_error", "crash", ...),
// "cancelled", "timeout", or "error" for anything else (an MCP server's
// failure).
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if _, ok := errors.AsType[*ArgsError](err); ok {
		return "invalid_arguments"
	}
	if k := sandbox.KindOf(err); k != "" {
		return string(k)
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}
