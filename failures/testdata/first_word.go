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
	if in.Text == "bad" {
		return "", errors.New("bad is not a word I know")
	}
	if strings.HasPrefix(in.Text, "!") {
		panic("no bangs")
	}
	for in.Text == "loop" {
	}
	return strings.Fields(in.Text)[0], nil
}
