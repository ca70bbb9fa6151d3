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
	// HTTP are the requests the tool sends on this input, each with the
	// answer it gets: where an example has them, the gate and `tools test`
	// answer the tool's requests from them and nothing reaches the
	// network. The example fails when the tool sends a request that is not
	// listed, or leaves one out.
	HTTP []Exchange `json:"http,omitempty"`
}

// Exchange is one request an example expects a tool to send, and the
// answer it gets. A secret in the request is written as the tool writes it,
// as its placeholder ({{secret:NAME}}): no example needs a secret's value.
type Exchange struct {
	Request  ExchangeRequest  `json:"request"`
	Response ExchangeResponse `json:"response"`
}

// ExchangeRequest is the request of an Exchange: its method (GET when
// empty), its URL as the tool writes it, and its body. Two bodies that are
// both JSON match when they hold the same value.
type ExchangeRequest struct {
	Method string `json:"method,omitempty"`
	URL    string `json:"url"`
	Body   string `json:"body,omitempty"`
}

// ExchangeResponse is the answer of an Exchange: its status (200 when
// zero), headers and body.
type ExchangeResponse struct {
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}
