// Package first_word returns the first word of a text.
package first_word

import (
	"context"
	"errors"
	"strings"
)

// Input is the text.
type Input struct {
	Text string `json:"text" jsonschema:"the text"`
}

// Execute returns the first word of in.Text.
func Execute(ctx context.Context, in Input) (string, error) {
	words := strings.Fields(in.Text)
	if len(words) == 0 {
		return "", errors.New("the text has no words: give some text")
	}
	return "first: " + words[0], nil
}
