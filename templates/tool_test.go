package templates

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"value":{"type":"number","description":"v"},"unit":{"type":"string","enum":["a","b"]},"flag":{"type":["boolean","null"]},"extra":{"type":"object"}},"required":["unit"]}`)
	var got []string
	for _, f := range Fields(schema) {
		got = append(got, f.Name+":"+f.Input())
	}
	if strings.Join(got, ",") != "unit:select,value:number,flag:checkbox,extra:json" {
		t.Errorf("fields = %v", got)
	}
}

// TestExamples: the page shows each stored example's input as stored, and
// what its output must contain or match, in words; a file that is not a
// list of examples shows none.
func TestExamples(t *testing.T) {
	raw := []byte(`[{"input":{"n":1},"contains":"one"},{"input":{"n":2},"matches":"^t.o$"},{"input":{}, "contains":"x","matches":"y"}]`)
	got := Examples(raw)
	want := []ExampleView{
		{Input: `{"n":1}`, Expect: `contains "one"`},
		{Input: `{"n":2}`, Expect: `matches /^t.o$/`},
		{Input: `{}`, Expect: `contains "x" and matches /y/`},
	}
	if len(got) != len(want) {
		t.Fatalf("Examples = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("example %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := Examples([]byte(`{"input":{}}`)); got != nil {
		t.Errorf("Examples of an object = %v, want nil", got)
	}
}
