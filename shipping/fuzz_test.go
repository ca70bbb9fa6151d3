package shipping

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"
	"time"

	"adaptbot/contract"
)

// FuzzReadBundle feeds the bundle reader what an import may be handed.
// The input is the tar inside the gzip (gzip'ed here, so the fuzzer
// mutates the layout rather than the compression), or a gzip stream as
// is when it starts with gzip's magic. A bundle or a *Refused, never a
// panic, and what is accepted names valid tools only.
func FuzzReadBundle(f *testing.F) {
	h := newHome(f, false, "calculator", "text_stats")
	for _, names := range [][]string{{"calculator"}, {"calculator", "text_stats"}} {
		items, err := Select(h.reg, names)
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteBundle(&b, items, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
			f.Fatal(err)
		}
		gz, err := gzip.NewReader(&b)
		if err != nil {
			f.Fatal(err)
		}
		raw, err := io.ReadAll(gz)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{})
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := data
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			var b bytes.Buffer
			w := gzip.NewWriter(&b)
			w.Write(data)
			w.Close()
			in = b.Bytes()
		}
		b, err := ReadBundle(bytes.NewReader(in))
		if err != nil {
			if _, ok := errors.AsType[*Refused](err); !ok {
				t.Fatalf("an error that is not a *Refused: %T %v", err, err)
			}
			return
		}
		if len(b.Tools) == 0 {
			t.Fatal("accepted a bundle of no tools")
		}
		for _, tool := range b.Tools {
			if err := contract.ValidName(tool.Name); err != nil || tool.Source == nil {
				t.Fatalf("accepted tool %q (%v), source %d bytes", tool.Name, err, len(tool.Source))
			}
		}
	})
}
