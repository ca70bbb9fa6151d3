package traces

import "time"

// The units of a trace, in the chat's traces and a direct run's alike.

// MaxOutput caps the part of a tool's output that a trace step keeps.
const MaxOutput = 2 << 10

// Millis is d in milliseconds with microsecond precision: the unit of
// every duration in a trace and a benchmark row.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
