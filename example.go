package adaptbot

import "encoding/json"

// Example is one check a tool must pass, stored with the tool in
// examples.json: an input and what the output must contain, or match. The
// generator runs it, the API carries it, and the tool page shows it.
type Example struct {
	// Input is the JSON object of arguments passed to Execute.
	Input json.RawMessage `json:"input"`
	// Contains is a substring the output must contain.
	Contains string `json:"contains,omitempty"`
	// Matches is a regular expression (RE2 syntax) the output must match.
	Matches string `json:"matches,omitempty"`
}
