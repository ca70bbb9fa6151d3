package cli

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestConfirmWithoutTerminal: with standard input that is no terminal
// (/dev/null, as under a service manager or in CI, is a character device
// but no terminal), a delete is refused before anything is asked: no
// [y/N] prompt, and the message names --yes.
func TestConfirmWithoutTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, stdin := range []struct {
		name string
		file *os.File
	}{{"dev-null", null}, {"pipe", r}} {
		t.Run(stdin.name, func(t *testing.T) {
			var stderr strings.Builder
			err := confirm(stdin.file, &stderr, false, "usage", "tools", "delete", "calculator", "It goes.")
			if strings.Contains(stderr.String(), "[y/N]") {
				t.Errorf("stderr = %q: asked a question no one can answer", stderr.String())
			}
			ee, ok := errors.AsType[*ExitError](err)
			if !ok || ee.Code != 2 || !strings.Contains(err.Error(), "--yes") {
				t.Errorf("err = %v, want a usage error (exit 2) that names --yes", err)
			}
		})
	}
}
