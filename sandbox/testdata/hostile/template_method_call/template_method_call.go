// Package template_method_call tries to reach ParseFiles from template text.
package template_method_call

import (
	"context"
	"strings"
	"text/template"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	t := template.Must(template.New("x").Parse(`{{ .ParseFiles "/etc/hostname" }}`))
	var b strings.Builder
	err := t.Execute(&b, t)
	return b.String(), err
}
