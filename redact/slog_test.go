package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestHandlerKeepsSecretsOutOfTheLog: a key in the message, a string, an
// error, a group, an attribute given once to the logger, or a value printed
// with %v never reaches the log in clear; the rest of the line is kept.
func TestHandlerKeepsSecretsOutOfTheLog(t *testing.T) {
	const key = "adaptbot_k3yK3yK3yK3yK3y"
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil))).With("caller", "Bearer "+key)
	log.Info("login with "+key+" refused",
		"args", `{"token":"`+key+`"}`,
		"err", fmt.Errorf("tool t: %w", errors.New("bad key "+key)),
		slog.Group("req", "auth", key, "n", 3),
		"url", struct{ U string }{"https://u:" + key + "@h"},
		"tool", "calculator")
	out := buf.String()
	if strings.Contains(out, key) {
		t.Fatalf("a key reached the log:\n%s", out)
	}
	for _, want := range []string{"login with " + Mask, "tool=calculator", "req.n=3", "Bearer " + Mask} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lost %q:\n%s", want, out)
		}
	}
}

func BenchmarkHandlerPlainLine(b *testing.B) {
	log := slog.New(Handler(slog.NewTextHandler(io.Discard, nil)))
	b.ReportAllocs()
	for b.Loop() {
		log.Info("chat", "tool", "calculator", "ms", 12.5, "user", "u-123")
	}
}

func BenchmarkHandlerPlainLineUnwrapped(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.ReportAllocs()
	for b.Loop() {
		log.Info("chat", "tool", "calculator", "ms", 12.5, "user", "u-123")
	}
}
