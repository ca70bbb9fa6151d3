package templates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"

	"adaptbot"
)

// This file turns a tool's parts into what its page shows: a form from its
// parameters' schema, its examples, and its source highlighted.

// Field is one input of a tool's form, from its parameters' schema.
type Field struct {
	Name, Type, Description, Default string
	Required                         bool
	Enum                             []string
}

// Input says which HTML input the field gets.
func (f Field) Input() string {
	switch {
	case len(f.Enum) > 0:
		return "select"
	case f.Type == "boolean":
		return "checkbox"
	case f.Type == "number" || f.Type == "integer":
		return "number"
	case f.Type == "object" || f.Type == "array":
		return "json"
	}
	return "text"
}

// Fields reads the top-level properties of a JSON schema, required
// ones first, each group in name order.
func Fields(schema json.RawMessage) []Field {
	var sc struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
			Default     any    `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &sc) != nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range sc.Required {
		req[r] = true
	}
	var out []Field
	for name, p := range sc.Properties {
		f := Field{Name: name, Description: p.Description, Required: req[name]}
		switch t := p.Type.(type) {
		case string:
			f.Type = t
		case []any: // ["string", "null"]
			for _, x := range t {
				if s, ok := x.(string); ok && s != "null" {
					f.Type = s
					break
				}
			}
		}
		for _, v := range p.Enum {
			f.Enum = append(f.Enum, fmt.Sprint(v))
		}
		if p.Default != nil {
			f.Default = fmt.Sprint(p.Default)
		}
		out = append(out, f)
	}
	// The schema's own order (the Input struct's fields), required first.
	order := propertyOrder(schema)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return order[out[i].Name] < order[out[j].Name]
	})
	return out
}

// propertyOrder returns the position of each top-level property as written
// in the schema, which a map loses.
func propertyOrder(schema json.RawMessage) map[string]int {
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(top["properties"]))
	order := map[string]int{}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return order
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return order
		}
		if k, ok := tok.(string); ok {
			order[k] = len(order)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return order
		}
	}
	return order
}

// ExampleView is one stored example (adaptbot.Example) as the page shows
// it: its input, and what the output must contain or match, in words.
type ExampleView struct {
	Input, Expect string
}

// ViewExample returns how the page shows e.
func ViewExample(e adaptbot.Example) ExampleView {
	v := ExampleView{Input: string(e.Input)}
	var parts []string
	if e.Contains != "" {
		parts = append(parts, "contains "+strconv.Quote(e.Contains))
	}
	if e.Matches != "" {
		parts = append(parts, "matches /"+e.Matches+"/")
	}
	v.Expect = strings.Join(parts, " and ")
	return v
}

// Examples returns the page's view of a tool's stored examples, the JSON
// of examples.json; nil if raw is not a list of examples.
func Examples(raw []byte) []ExampleView {
	var exs []adaptbot.Example
	if json.Unmarshal(raw, &exs) != nil {
		return nil
	}
	out := make([]ExampleView, 0, len(exs))
	for _, e := range exs {
		out = append(out, ViewExample(e))
	}
	return out
}

var (
	chromaOnce  sync.Once
	chromaFmt   *chromahtml.Formatter
	chromaStyle *chroma.Style
	chromaCSS   []byte
)

func initChroma() {
	chromaOnce.Do(func() {
		chromaFmt = chromahtml.New(chromahtml.WithClasses(true), chromahtml.WithLineNumbers(true), chromahtml.TabWidth(4))
		chromaStyle = styles.Get("github")
		var b bytes.Buffer
		chromaFmt.WriteCSS(&b, chromaStyle)
		chromaCSS = b.Bytes()
	})
}

// Highlight renders Go source as HTML with classes (styled by
// /static/chroma.css). Chroma escapes the source.
func Highlight(src []byte) template.HTML {
	initChroma()
	it, err := lexers.Get("go").Tokenise(nil, string(src))
	if err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(string(src)) + "</pre>")
	}
	var b bytes.Buffer
	if err := chromaFmt.Format(&b, chromaStyle, it); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(string(src)) + "</pre>")
	}
	return template.HTML(b.String()) // chroma escaped every token
}

// HighlightCSS is the style sheet of Highlight's classes, served as
// /static/chroma.css.
func HighlightCSS() []byte {
	initChroma()
	return chromaCSS
}
