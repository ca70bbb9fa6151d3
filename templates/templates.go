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

// Pages are the parsed page templates: index.html (chat), dashboard.html,
// tools.html (the tool list), tool.html (one tool), request.html (one
// request and its trace), login.html (sign-in)
// and error.html (a refusal or a missing page, for a browser).
var Pages = template.Must(template.New("").Funcs(template.FuncMap{"dict": dict, "minus1": func(n int) int { return n - 1 }}).ParseFS(files, "*.html"))

// dict builds a map from key, value pairs, for passing several values to a
// shared template such as "header".
func dict(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			m[k] = kv[i+1]
		}
	}
	return m
}

// Static holds the pages' scripts, styles and vendored libraries, served at
// /static/: every script is a file, never inline, so the pages work under a
// Content-Security-Policy of script-src 'self'.
var Static, _ = fs.Sub(static, "static")
