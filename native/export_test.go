package native

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
)

// compileCounts holds each test tier's count of native builds, read from
// its log (logCompiled): the tests' view of how often the tier compiled,
// with nothing for them in the binary.
var compileCounts sync.Map // *Tier → *atomic.Int64

// countBuilds gives opts a log that counts the builds of the tier made
// with it; register the tier with trackBuilds.
func countBuilds(opts Options, n *atomic.Int64) Options {
	next := opts.Log
	if next == nil {
		next = opts.Sandbox.Log
	}
	if next == nil {
		next = slog.New(slog.DiscardHandler)
	}
	opts.Log = slog.New(countHandler{next: next.Handler(), n: n})
	return opts
}

// builds is how many native builds tier has run to the end.
func builds(tier *Tier) int64 {
	n, ok := compileCounts.Load(tier)
	if !ok {
		panic("builds of a tier made without countBuilds")
	}
	return n.(*atomic.Int64).Load()
}

// versionCount is how many tool versions the tier remembers.
func (t *Tier) versionCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.versions)
}

// countHandler counts the records that say a build ended well, and passes
// every record on.
type countHandler struct {
	next slog.Handler
	n    *atomic.Int64
}

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == logCompiled {
		h.n.Add(1)
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h countHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return countHandler{next: h.next.WithAttrs(as), n: h.n}
}

func (h countHandler) WithGroup(name string) slog.Handler {
	return countHandler{next: h.next.WithGroup(name), n: h.n}
}
