package toolbox

import "adaptbot"

// outcome names how a tool call ended, for its execute_tool span and its
// count in the metrics: "ok", or its kind of failure (adaptbot.FailureOf).
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return string(adaptbot.FailureOf(err))
}
