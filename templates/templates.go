// Package templates holds AdaptBot's web pages, embedded in the binary so
// `go run ./app` serves them from any working directory.
//
// Pages carry no inline script (the Content-Security-Policy forbids it):
// each page's script is a file in static/, served at /static/<file>.
package templates

import (
	"embed"
	"html/template"
	"io/fs"
)

//go:embed *.html
var files embed.FS

//go:embed static
var static embed.FS

// Pages are the parsed page templates: index.html (chat) and dashboard.html.
var Pages = template.Must(template.ParseFS(files, "*.html"))

// Static holds the pages' scripts (and any other static file), by name.
var Static, _ = fs.Sub(static, "static")
