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
