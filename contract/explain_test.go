package contract

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestValidateSaysWhatIsWrong: a refused argument is named as the caller
// wrote it, with what it must be; never the validator's schema paths
// ("validating root", "/properties/..."), its rule names or Go's words.
func TestValidateSaysWhatIsWrong(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(`{"type":"object","properties":{
		"expression":{"type":"string"},
		"n":{"type":"integer","minimum":1,"maximum":7},
		"unit":{"type":"string","enum":["m","km"]},
		"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"],"additionalProperties":false},
		"list":{"type":"array","items":{"type":"string"},"maxItems":2},
		"code":{"type":"string","pattern":"^[A-Z]{3}$","minLength":3}},
		"required":["expression"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	const send = `; send a JSON object such as {"expression": "…"}`
	for _, tt := range []struct{ args, want string }{
		{`nope`, `arguments are not valid JSON: "nope" goes wrong at character 2` + send},
		{`{"expression": `, `arguments are not valid JSON: "{\"expression\":" ends too soon (a { [ or " left open?)` + send},
		{`{"a":1} {}`, `arguments are not valid JSON: "{\"a\":1} {}" is not one JSON value` + send},
		{`[1]`, `arguments must be a JSON object, not [1]` + send},
		{`{}`, `arguments do not match the schema: "expression" is missing: it is required`},
		{`{"expr":"1"}`, `arguments do not match the schema: "expr" is not a parameter; the parameters are "code", "expression", "list", "n", "point" and "unit"`},
		{`{"expression":5}`, `arguments do not match the schema: "expression" must be text (a JSON string), not the number 5`},
		{`{"expression":{"a":1}}`, `arguments do not match the schema: "expression" must be text (a JSON string), not an object`},
		{`{"expression":"x","n":0}`, `arguments do not match the schema: "n" must be at least 1, not 0`},
		{`{"expression":"x","n":1.5}`, `arguments do not match the schema: "n" must be a whole number, not the number 1.5`},
		{`{"expression":"x","unit":"mi"}`, `arguments do not match the schema: "unit" must be one of "m" or "km"`},
		{`{"expression":"x","point":{"x":1}}`, `arguments do not match the schema: "point" needs "y", which is missing`},
		{`{"expression":"x","point":{"x":1,"y":2,"z":3}}`, `arguments do not match the schema: "z" is not a field of "point"; its fields are "x" and "y"`},
		{`{"expression":"x","point":{"x":"a","y":2}}`, `arguments do not match the schema: "point.x" must be a number, not the text "a"`},
		{`{"expression":"x","list":[1]}`, `arguments do not match the schema: each item of "list" must be text (a JSON string), not the number 1`},
		{`{"expression":"x","list":["a","b","c"]}`, `arguments do not match the schema: "list" must hold at most 2 items`},
		{`{"expression":"x","code":"abc"}`, `arguments do not match the schema: "code" must match the pattern "^[A-Z]{3}$"`},
	} {
		err := s.Validate(json.RawMessage(tt.args))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Validate(%s) =\n  %v\nwant\n  %s", tt.args, err, tt.want)
		}
		for _, raw := range []string{"validating", "/properties", "invalid character", "Unicode code points", "map[", "big.Rat"} {
			if err != nil && strings.Contains(err.Error(), raw) {
				t.Errorf("Validate(%s) = %v: the validator's or decoder's own words (%q)", tt.args, err, raw)
			}
		}
	}
	// A result is named as one, with no advice on what to send.
	if err := s.ValidateResult(json.RawMessage(`{"expression":"x","n":"two"}`)); err == nil || err.Error() != `the result does not match the schema: "n" must be a whole number, not the text "two"` {
		t.Errorf("ValidateResult = %v", err)
	}
}
