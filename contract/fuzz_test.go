package contract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds the contract checker any source a model may write: a
// Spec or an error, never a panic. What it accepts has a schema that
// compiles and a gofmt'ed source that passes again.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	for _, name := range []string{"calculator", "text_stats", "unit_converter"} {
		if src, err := os.ReadFile(filepath.Join("..", "tools", name, name+".go")); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("package currency_converter\n"))
	f.Add([]byte("// Package currency_converter x.\npackage currency_converter\nfunc Execute(ctx context.Context, in Input) (string, error)\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		const name = "currency_converter"
		spec, err := Parse(name, src)
		CallSites(name, src)
		if err != nil {
			return
		}
		if spec.Name != name {
			t.Fatalf("spec for %q", spec.Name)
		}
		if !json.Valid(spec.Parameters) {
			t.Fatalf("invalid schema JSON %s", spec.Parameters)
		}
		if _, err := CompileSchema(spec.Parameters); err != nil {
			t.Fatalf("accepted a source whose schema does not compile: %v\n%s", err, spec.Parameters)
		}
		if _, err := Parse(name, spec.Source); err != nil {
			t.Fatalf("the gofmt'ed source of an accepted tool is refused: %v", err)
		}
	})
}
