package shipping

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
	"adaptbot/toolkit"
)

//go:embed templates
var templates embed.FS

var tmpl = template.Must(template.ParseFS(templates, "templates/*.tmpl"))

// DefaultTimeout is a call's limit in an exported server for a tool that
// declares none: the sandbox's default.
const DefaultTimeout = sandbox.DefaultCallTimeout

// ExportOptions says where and how to write an exported module.
type ExportOptions struct {
	// Dir is the module's folder: it must not exist, or be empty.
	Dir string
	// Module is the module path; empty means the folder's name.
	Module string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Export writes items (from Select) as a standalone Go module in
// opts.Dir: a server of the tools over MCP (stdio, or streamable HTTP with
// --http), each tool's source compiled natively, the toolkit code they use,
// a test per tool from its stored examples, a README and a licence. It
// refuses, naming the tool, a source that Go would compile with more reach
// than the sandbox gives it, and writes nothing then. It returns the files
// written, relative to opts.Dir.
func Export(items []Item, opts ExportOptions) ([]string, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.Module == "" {
		opts.Module = moduleName(filepath.Base(dir))
	}
	if err := checkModulePath(opts.Module); err != nil {
		return nil, err
	}
	files, err := moduleFiles(items, opts)
	if err != nil {
		return nil, err
	}
	if err := emptyDir(dir); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// emptyDir makes dir, or checks that it is an empty folder: an export
// never mixes its files with others'.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: export into a new folder", dir)
	}
	return nil
}

// moduleName turns a folder's name into a module path.
func moduleName(base string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-._")
	if name == "" {
		return "tools"
	}
	return name
}

// checkModulePath accepts the module paths an export may declare.
func checkModulePath(p string) error {
	for _, elem := range strings.Split(p, "/") {
		if elem == "" || elem == "." || elem == ".." || strings.Trim(elem, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~") != "" {
			return fmt.Errorf("module path %q: use letters, digits, '-', '.', '_' and '/' (e.g. example.com/mytools)", p)
		}
	}
	return nil
}

// exportTool is one tool as the templates see it.
type exportTool struct {
	Name, Alias, Title, Description string
	Input, Output                   string
	ReadOnly, OpenWorld             bool
	TimeoutExpr                     string
	Version                         int
	SHA256                          string
	Callee                          bool
	Examples                        []exportExample
	Module                          string
}

// Reach says in words what the tool reaches, for the README.
func (t exportTool) Reach() string {
	if t.OpenWorld {
		return "the network"
	}
	return "nothing outside"
}

// DescriptionLine is the description on one line, without markup.
func (t exportTool) DescriptionLine() string {
	s := strings.Join(strings.Fields(t.Description), " ")
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

type exportExample struct{ Input, Contains, Matches string }

// moduleData is what the module-wide templates see.
type moduleData struct {
	Module, Command, Version, GoVersion, Date, NameList, Instructions string
	Year                                                              int
	Tools                                                             []exportTool
	HTTP, Calls, OpenWorldAny                                         bool
}

// moduleFiles renders every file of the module, by path.
func moduleFiles(items []Item, opts ExportOptions) (map[string][]byte, error) {
	if len(items) == 0 {
		return nil, errors.New("no tools to export")
	}
	local := map[string]toolbox.Spec{}
	for _, it := range items {
		local[it.Entry.Name] = toolbox.Spec{Name: it.Entry.Name, Network: it.Spec.Network, Calls: it.Spec.Calls}
	}
	m, err := readGoMod(adaptbot.GoMod)
	if err != nil {
		return nil, err
	}
	gomod, gosum, err := goModFiles(opts.Module, m)
	if err != nil {
		return nil, err
	}
	now := opts.Now().UTC()
	d := moduleData{
		Module:    opts.Module,
		Command:   path.Base(opts.Module),
		Version:   now.Format("2006.01.02"),
		GoVersion: m.goVersion,
		Date:      now.Format("2006-01-02"),
		Year:      now.Year(),
	}
	files := map[string][]byte{"go.mod": gomod, "go.sum": gosum}
	var names []string
	for _, it := range items {
		if err := nativeSafe(it); err != nil {
			return nil, err
		}
		name := it.Entry.Name
		names = append(names, name)
		src, err := rewriteToolkit(name, it.Code, opts.Module+"/toolkit")
		if err != nil {
			return nil, refuse(NotShippable, name, "", "%s: %v", name, err)
		}
		files["tools/"+name+"/"+name+".go"] = src
		for _, k := range it.Spec.Toolkit {
			if k == "Call" || k == "CallJSON" {
				d.Calls = true
			} else {
				d.HTTP = true
			}
		}
		open := toolbox.OpenWorld(local[name], local)
		d.OpenWorldAny = d.OpenWorldAny || open
		timeout := it.Spec.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		t := exportTool{
			Name: name, Alias: "tool_" + name, Title: toolbox.Title(name), Description: it.Entry.Description,
			Input: string(it.Entry.Parameters), Output: string(it.Entry.Output),
			ReadOnly: !open, OpenWorld: open, TimeoutExpr: durationExpr(timeout),
			Version: it.Entry.Version, SHA256: it.Entry.SHA256, Callee: !it.Asked, Module: opts.Module,
		}
		if t.Examples, err = examples(it); err != nil {
			return nil, err
		}
		d.Tools = append(d.Tools, t)
	}
	d.NameList = strings.Join(names, ", ")
	d.Instructions = "Tools built with AdaptBot: " + d.NameList + "."
	for _, t := range d.Tools {
		if files["tools/"+t.Name+"/"+t.Name+"_test.go"], err = render("tool_test.go.tmpl", t, true); err != nil {
			return nil, err
		}
	}
	for file, name := range map[string]string{
		"main.go": "main.go.tmpl", "main_test.go": "main_test.go.tmpl", "tools/tools.go": "tools.go.tmpl",
		"README.md": "README.md.tmpl", "LICENSE": "LICENSE.tmpl",
	} {
		if files[file], err = render(name, d, strings.HasSuffix(file, ".go")); err != nil {
			return nil, err
		}
	}
	if d.HTTP {
		for name, src := range toolkit.Source() {
			files["toolkit/"+name] = src
		}
	}
	if d.Calls {
		if files["toolkit/call.go"], err = render("call.go.tmpl", d, true); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// render executes a template; Go files are gofmt'ed, which also proves
// they parse.
func render(name string, data any, goSource bool) ([]byte, error) {
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("export: %s: %w", name, err)
	}
	if !goSource {
		return b.Bytes(), nil
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("export: %s does not parse: %w", name, err)
	}
	return out, nil
}

// examples reads a tool's stored examples for its test.
func examples(it Item) ([]exportExample, error) {
	if it.Examples == nil {
		return nil, nil
	}
	var raw []adaptbot.Example
	if err := json.Unmarshal(it.Examples, &raw); err != nil {
		return nil, refuse(NotShippable, it.Entry.Name, "", "%s: its examples are not a JSON array of examples: %v", it.Entry.Name, err)
	}
	out := make([]exportExample, 0, len(raw))
	for _, e := range raw {
		var compact bytes.Buffer
		if err := json.Compact(&compact, e.Input); err != nil {
			return nil, refuse(NotShippable, it.Entry.Name, "", "%s: an example's input is not JSON: %v", it.Entry.Name, err)
		}
		out = append(out, exportExample{Input: compact.String(), Contains: e.Contains, Matches: e.Matches})
	}
	return out, nil
}

// durationExpr writes d as Go.
func durationExpr(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + " * time.Second"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + " * time.Millisecond"
	}
	return strconv.FormatInt(int64(d), 10)
}

// nativeSafe refuses a source that, compiled by Go rather than interpreted
// in the sandbox, could do more than the sandbox lets it: text/template
// (natively, a template may call methods such as ParseFiles, which reads
// files; the sandbox gives tools a Template without them) and compiler
// directives (//go:...), which the interpreter ignores.
func nativeSafe(it Item) error {
	name := it.Entry.Name
	if len(it.Spec.Hosts) > 0 {
		return refuse(NotShippable, name, "", "%s declares the hosts it acts on (const Hosts): its secrets, its declared hosts and the approval of what it sends are the server's, which a program of its own would not have; it cannot be exported", name)
	}
	for _, imp := range it.Spec.Imports {
		if imp == "text/template" {
			return refuse(NotShippable, name, "", "%s imports text/template: compiled natively, its templates could call methods that read files, which the sandbox keeps from them; it cannot be exported", name)
		}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", it.Code, parser.ParseComments)
	if err != nil {
		return refuse(NotShippable, name, "", "%s does not parse: %v", name, err)
	}
	for _, g := range f.Comments {
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:") || strings.HasPrefix(c.Text, "//line ") || strings.HasPrefix(c.Text, "// +build") {
				p := fset.Position(c.Pos())
				return refuse(NotShippable, name, "", "%s.go:%d has a compiler directive (%s), which Go would obey outside the sandbox; remove it to export the tool", name, p.Line, firstLine(c.Text))
			}
		}
	}
	return nil
}

// rewriteToolkit points the source's import of AdaptBot's toolkit at the
// module's copy, leaving every other byte as it was.
func rewriteToolkit(name string, src []byte, to string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var imp *ast.ImportSpec
	for _, s := range f.Imports {
		if p, _ := strconv.Unquote(s.Path.Value); p == contract.ToolkitPath {
			imp = s
		}
	}
	if imp == nil {
		return src, nil
	}
	start, end := fset.Position(imp.Path.Pos()).Offset, fset.Position(imp.Path.End()).Offset
	// The copy's package is toolkit too, so the code reads the same.
	out := append([]byte{}, src[:start]...)
	out = append(out, strconv.Quote(to)...)
	return append(out, src[end:]...), nil
}
