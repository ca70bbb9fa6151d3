package auth

import (
	"net/netip"
	"sync"
	"time"
)

// Throttle slows down whoever guesses credentials: after Free failed
// credentials (a key, a token, a session cookie) from one client address,
// that address waits before its credentials are checked again, Base after
// the first failure beyond Free, twice as long after each next one, up to
// Max. An address that fails nothing for Forget starts afresh. IPv6
// addresses count by their /64, which one client usually holds whole.
//
// A success does not clear the count: someone holding one good key could
// otherwise guess others between its uses. It is safe for concurrent use.
type Throttle struct {
	Free   int
	Base   time.Duration
	Max    time.Duration
	Forget time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu sync.Mutex
	by map[netip.Addr]*strikes
}

// strikes are one address's failures.
type strikes struct {
	n     int
	last  time.Time // the last failure
	until time.Time // no credentials are checked before this
}

// The throttle's defaults: five failures free, then one second doubling up
// to five minutes; forgotten after fifteen quiet minutes.
const (
	DefaultThrottleFree   = 5
	DefaultThrottleBase   = time.Second
	DefaultThrottleMax    = 5 * time.Minute
	DefaultThrottleForget = 15 * time.Minute
	// throttleKeep bounds the addresses remembered; beyond it the quiet
	// ones are forgotten first.
	throttleKeep = 100_000
)

// NewThrottle returns a Throttle with the defaults, waiting at most limit
// (0 is DefaultThrottleMax).
func NewThrottle(limit time.Duration) *Throttle {
	if limit <= 0 {
		limit = DefaultThrottleMax
	}
	return &Throttle{Free: DefaultThrottleFree, Base: DefaultThrottleBase, Max: limit, Forget: max(DefaultThrottleForget, 3*limit)}
}

func (t *Throttle) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// client is the key an address counts under.
func client(addr netip.Addr) netip.Addr {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.Addr()
	}
	return addr
}

// Wait returns how long addr must still wait before its credentials are
// checked: 0 if they may be now.
func (t *Throttle) Wait(addr netip.Addr) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.by[client(addr)]
	if !ok {
		return 0
	}
	if d := s.until.Sub(t.now()); d > 0 {
		return d
	}
	return 0
}

// Fail counts a failed credential from addr, and returns how long addr
// must now wait (0 while it has failures free).
func (t *Throttle) Fail(addr netip.Addr) time.Duration {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[netip.Addr]*strikes{}
	}
	if len(t.by) >= throttleKeep {
		t.prune(now)
	}
	k := client(addr)
	s, ok := t.by[k]
	if !ok || now.Sub(s.last) > t.Forget {
		s = &strikes{}
		t.by[k] = s
	}
	s.n++
	s.last = now
	if s.n <= t.Free {
		return 0
	}
	d := t.Base
	for i := t.Free + 1; i < s.n && d < t.Max; i++ {
		d *= 2
	}
	d = min(d, t.Max)
	s.until = now.Add(d)
	return d
}

// prune forgets the addresses quiet for Forget, and, if that is not enough,
// every address not waiting now. Call with mu held.
func (t *Throttle) prune(now time.Time) {
	for k, s := range t.by {
		if now.Sub(s.last) > t.Forget {
			delete(t.by, k)
		}
	}
	if len(t.by) < throttleKeep {
		return
	}
	for k, s := range t.by {
		if !now.Before(s.until) {
			delete(t.by, k)
		}
	}
}
