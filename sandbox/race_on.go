//go:build race

package sandbox

// raceEnabled: the race detector maps terabytes of shadow address space, so
// a worker built with it cannot take a data-segment rlimit.
const raceEnabled = true
