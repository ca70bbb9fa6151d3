package toolbox

// outcome names how a tool call ended, for its execute_tool span and its
// count in the metrics: "ok", or its kind of failure (KindOf).
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return string(KindOf(err))
}
