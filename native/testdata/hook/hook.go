// Package hook posts its text to the team's webhook and says what it
// answered: a tool that acts on someone's system.
package hook

import (
	"context"

	"adaptbot/toolkit"
)

// Hosts are the hosts the tool reaches.
const Hosts = "hooks.example.org"

// Input is the text to post.
type Input struct {
	Text string `json:"text"`
}

// Execute posts the text once.
func Execute(ctx context.Context, in Input) (string, error) {
	resp, err := toolkit.PostJSON(ctx, "https://hooks.example.org/services/{{secret:HOOK}}", nil, map[string]string{"text": in.Text})
	if err != nil {
		return "", err
	}
	return "posted " + in.Text + ": " + resp.Body, nil
}
