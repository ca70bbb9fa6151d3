// Package template_files tries to read a file through text/template.
package template_files

import (
	"context"
	"strings"
	"text/template"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	t, err := template.New("x").ParseFiles("/etc/hostname")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = t.ExecuteTemplate(&b, "hostname", nil)
	return b.String(), err
}
