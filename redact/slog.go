package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler wraps h so that every message and attribute it logs is redacted
// first: a key in an error's words, a tool's arguments or a URL never
// reaches the log in clear. Strings and errors are redacted; any other
// value only when its printed form holds a secret, and it is then logged as
// that printed form, redacted.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ next slog.Handler }

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = attr(a)
	}
	return handler{h.next.WithAttrs(clean)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.next.WithGroup(name)} }

// attr returns a with its value redacted, groups included.
func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); maybe(s) {
			return slog.String(a.Key, String(s))
		}
	case slog.KindGroup:
		as := v.Group()
		clean := make([]slog.Attr, len(as))
		for i, g := range as {
			clean[i] = attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindAny:
		var s string
		if err, ok := v.Any().(error); ok {
			s = err.Error()
		} else {
			s = fmt.Sprint(v.Any())
		}
		if r := String(s); r != s {
			return slog.String(a.Key, r)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
