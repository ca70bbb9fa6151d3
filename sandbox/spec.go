package sandbox

import (
	"sync"
	"time"
)

// specCacheSize bounds the contract checks remembered, per runner.
const specCacheSize = 1024

// specCache remembers, per tool version, the outcome of the contract check:
// a warm call must not parse its source again.
type specCache struct {
	mu sync.Mutex
	m  map[string]specEntry
}

// specEntry is what the host needs of a tool's declarations: its own time
// limit and the hosts it declares (the only ones its requests may reach
// where no Sender serves them).
type specEntry struct {
	timeout time.Duration
	hosts   []string
	err     error
}

// check returns the tool's declarations, or its contract error.
func (c *specCache) check(hash, tool string, src []byte) (specEntry, error) {
	c.mu.Lock()
	e, ok := c.m[hash]
	c.mu.Unlock()
	if ok {
		return e, e.err
	}
	e, e.err = checkSource(tool, src)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= specCacheSize {
		c.m = map[string]specEntry{}
	}
	c.m[hash] = e
	c.mu.Unlock()
	return e, e.err
}
