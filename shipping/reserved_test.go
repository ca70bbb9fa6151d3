package shipping

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
)

// TestImportRefusesReservedNames: a bundle's tool whose name AdaptBot keeps
// for itself (a bundle from an AdaptBot that did not keep it yet) is not
// imported under it, nor is a tool renamed to such a name; renamed to
// another, it comes in and serves.
func TestImportRefusesReservedNames(t *testing.T) {
	a := newHome(t, false, "calculator")
	calc, _ := a.reg.Tool("calculator")
	src, err := renameInSource("calculator", "general", calc.Code, nil)
	if err != nil {
		t.Fatal(err)
	}
	entry := calc.Entry
	entry.Name = "general"
	bundle := &Bundle{Tools: []BundleTool{{Name: "general", Source: src, Examples: a.reg.Examples("calculator"), Entry: entry}}}

	b := newHome(t, false)
	before := snapshot(t, b.dir)
	for _, tt := range []struct {
		rename map[string]string
		reason Reason
		want   string
	}{
		{nil, Collision, `the name "general" is reserved`},
		{map[string]string{"general": "build_calc"}, Malformed, `--rename general=build_calc: the name "build_calc" is reserved`},
	} {
		_, err := Import(context.Background(), bundle, b.reg, gateOf(t, b), ImportOptions{Rename: tt.rename})
		var r *Refused
		if !errors.As(err, &r) || r.Reason != tt.reason || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("import with --rename %v: %v, want a %s refusal saying %q", tt.rename, err, tt.reason, tt.want)
		}
		if tt.rename == nil && !strings.Contains(err.Error(), "--rename general=NEW_NAME") {
			t.Errorf("the refusal does not say how to import it: %v", err)
		}
	}
	if after := snapshot(t, b.dir); !maps.Equal(before, after) {
		t.Error("a refused import changed files")
	}
	got, err := Import(context.Background(), bundle, b.reg, gateOf(t, b), ImportOptions{Rename: map[string]string{"general": "calc"}})
	if err != nil || len(got) != 1 || got[0].Name != "calc" {
		t.Fatalf("import --rename general=calc: %+v, %v", got, err)
	}
	if _, ok := b.reg.Tool("calc"); !ok {
		t.Error("calc, imported from general, does not serve")
	}
}
