package sandbox

import (
	"io"
	"reflect"
	"text/template"
)

// templateKey is the Yaegi symbol key of text/template.
const templateKey = "text/template/template"

// toolTemplate is what tools get as text/template's Template: the standard one
// without ParseFiles, ParseGlob and ParseFS, which read files. Wrapping the
// type (not just dropping the package functions) matters because a template
// can call methods of its data by name: a tool holding a *template.Template
// could otherwise reach ParseFiles from template text.
type toolTemplate struct{ t *template.Template }

func wrapTemplate(t *template.Template) *toolTemplate {
	if t == nil {
		return nil
	}
	return &toolTemplate{t: t}
}

func wrapTemplateErr(t *template.Template, err error) (*toolTemplate, error) {
	return wrapTemplate(t), err
}

// Clone returns a duplicate of the template, including all associated templates.
func (t *toolTemplate) Clone() (*toolTemplate, error) { return wrapTemplateErr(t.t.Clone()) }

// DefinedTemplates returns a string listing the defined templates.
func (t *toolTemplate) DefinedTemplates() string { return t.t.DefinedTemplates() }

// Delims sets the action delimiters.
func (t *toolTemplate) Delims(left, right string) *toolTemplate {
	t.t.Delims(left, right)
	return t
}

// Execute applies the template to data, writing the output to w.
func (t *toolTemplate) Execute(w io.Writer, data any) error { return t.t.Execute(w, data) }

// ExecuteTemplate applies the template called name to data, writing to w.
func (t *toolTemplate) ExecuteTemplate(w io.Writer, name string, data any) error {
	return t.t.ExecuteTemplate(w, name, data)
}

// Funcs adds the functions of funcMap to the template's function map.
func (t *toolTemplate) Funcs(funcMap template.FuncMap) *toolTemplate {
	t.t.Funcs(funcMap)
	return t
}

// Lookup returns the associated template called name, or nil.
func (t *toolTemplate) Lookup(name string) *toolTemplate { return wrapTemplate(t.t.Lookup(name)) }

// Name returns the name of the template.
func (t *toolTemplate) Name() string { return t.t.Name() }

// New allocates a new template associated with t.
func (t *toolTemplate) New(name string) *toolTemplate { return wrapTemplate(t.t.New(name)) }

// Option sets options for the template.
func (t *toolTemplate) Option(opt ...string) *toolTemplate {
	t.t.Option(opt...)
	return t
}

// Parse parses text as a template body for t.
func (t *toolTemplate) Parse(text string) (*toolTemplate, error) {
	_, err := t.t.Parse(text)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Templates returns the templates associated with t.
func (t *toolTemplate) Templates() []*toolTemplate {
	var out []*toolTemplate
	for _, x := range t.t.Templates() {
		out = append(out, wrapTemplate(x))
	}
	return out
}

func templateSymbols() map[string]reflect.Value {
	return map[string]reflect.Value{
		"HTMLEscape":       reflect.ValueOf(template.HTMLEscape),
		"HTMLEscapeString": reflect.ValueOf(template.HTMLEscapeString),
		"HTMLEscaper":      reflect.ValueOf(template.HTMLEscaper),
		"IsTrue":           reflect.ValueOf(template.IsTrue),
		"JSEscape":         reflect.ValueOf(template.JSEscape),
		"JSEscapeString":   reflect.ValueOf(template.JSEscapeString),
		"JSEscaper":        reflect.ValueOf(template.JSEscaper),
		"Must": reflect.ValueOf(func(t *toolTemplate, err error) *toolTemplate {
			if err != nil {
				panic(err)
			}
			return t
		}),
		"New":             reflect.ValueOf(func(name string) *toolTemplate { return wrapTemplate(template.New(name)) }),
		"URLQueryEscaper": reflect.ValueOf(template.URLQueryEscaper),

		"ExecError": reflect.ValueOf((*template.ExecError)(nil)),
		"FuncMap":   reflect.ValueOf((*template.FuncMap)(nil)),
		"Template":  reflect.ValueOf((*toolTemplate)(nil)),
	}
}
