package adaptbot

import "time"

// MaxTraceOutput caps the part of a tool's output that a trace step keeps,
// in the chat's traces and a direct run's alike.
const MaxTraceOutput = 2 << 10

// Millis is d in milliseconds with microsecond precision: the unit of
// every duration in a trace and a benchmark row.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Plural is "s" unless n is 1: fmt.Sprintf("%d case%s", n, Plural(n)).
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
