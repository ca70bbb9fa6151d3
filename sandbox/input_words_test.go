package sandbox

import (
	"strings"
	"testing"
)

// TestInputProblemsInTheCallersWords: arguments that do not decode into a
// tool's Input are named as the arguments name them, with what they must
// be; never Go's struct, field or type names.
func TestInputProblemsInTheCallersWords(t *testing.T) {
	type Input struct {
		Expression string `json:"expression"`
		Small      int8   `json:"small"`
		Count      uint   `json:"count"`
		Tags       []string
	}
	for _, tt := range []struct{ input, want string }{
		{`{"expression": 5}`, `"expression" must be text (a JSON string), not a number`},
		{`{"small": 300}`, `"small" must be a whole number from -128 to 127, not 300`},
		{`{"count": -1}`, `"count" must be a whole number from 0, not -1`},
		{`{"Tags": "a"}`, `"Tags" must be a list (a JSON array), not text`},
		{`{"other": 1}`, `"other" is not a parameter of the tool`},
		{`{"expression": `, `not valid JSON`},
	} {
		var in Input
		err := decodeInput([]byte(tt.input), &in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("decodeInput(%s) = %v, want %q", tt.input, err, tt.want)
		}
		for _, raw := range []string{"Go ", "Input.", "int8", "json:", "unmarshal"} {
			if err != nil && strings.Contains(err.Error(), raw) {
				t.Errorf("decodeInput(%s) = %v: Go's words (%q)", tt.input, err, raw)
			}
		}
	}
}
