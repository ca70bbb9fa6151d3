// Package templates holds AdaptBot's web pages, embedded in the binary so
// `go run ./app` serves them from any working directory.
package templates

import (
	"embed"
	"html/template"
)

//go:embed *.html
var files embed.FS

// Pages are the parsed page templates: index.html (chat) and dashboard.html.
var Pages = template.Must(template.ParseFS(files, "*.html"))
