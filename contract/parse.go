package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"time"

	"adaptbot"
)

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// ValidName reports whether name can name a tool: snake_case, starting with a
// letter, at most 63 characters. Such a name is also a safe folder name: it can
// hold no path separator and no "..".
func ValidName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("invalid tool name %q: use snake_case, [a-z][a-z0-9_]{0,62}", name)
	}
	return nil
}

// Spec is what a tool's source says about the tool: the part of its
// description the source declares (adaptbot.Tool: its name, the package
// comment, the schemas of Input and Output, its category, what it
// reaches), and what only the gate needs. Origin and Version are the
// registry's, and stay empty here.
//
// The description's parts come from: Name, the package name; Description,
// the package comment without its "Package <name>" lead; Category, an
// optional `const Category = "..."`; Parameters, the JSON schema of Input;
// Output, the JSON schema of the result when Execute returns an Output
// struct, (Output, error), nil for any other result; Network, whether the
// source refers to toolkit.Get or toolkit.GetJSON; Calls, the tools it
// calls by name through toolkit.Call or toolkit.CallJSON, sorted; NoDirect,
// `const Direct = false`: its output is never fit to show a person as it
// is, so the chat never offers the model to answer with it.
type Spec struct {
	adaptbot.Tool
	// Timeout is the tool's own call limit, from an optional
	// `const Timeout = 2 * time.Second` (or "2s"); zero means the default.
	Timeout time.Duration
	// Imports are the import paths, as written.
	Imports []string
	// Toolkit lists the functions and values of package toolkit the source
	// refers to, sorted ("Get", "QueryEscape").
	Toolkit []string
	// Secrets are the names of the secrets the source's string literals
	// name ({{secret:NAME}}), sorted: those the tool needs the caller to
	// have set. The hosts it declares are the Tool's (Hosts).
	Secrets []string
	// Source is the gofmt'ed source.
	Source []byte
}

// Error lists every way a source breaks the contract, one problem a line, so a
// person or a model can fix them all at once.
type Error struct {
	Tool     string
	Problems []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("tool %s breaks the contract:\n- %s", e.Tool, strings.Join(e.Problems, "\n- "))
}

// Parse checks src against the tool contract for the tool called name and
// returns its Spec. All problems found are reported together in an *Error;
// a source that does not parse returns the parser's errors.
func Parse(name string, src []byte) (*Spec, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("tool %s does not parse: %w", name, err)
	}
	var formatted bytes.Buffer
	if err := format.Node(&formatted, fset, f); err != nil {
		return nil, fmt.Errorf("tool %s: gofmt: %w", name, err)
	}

	c := checker{fset: fset, name: name, types: map[string]*ast.TypeSpec{}}
	spec := &Spec{Tool: adaptbot.Tool{Name: name}, Source: formatted.Bytes()}

	if f.Name.Name != name {
		c.problem(f.Name.Pos(), "package is %q, must be %q (the tool's name)", f.Name.Name, name)
	}
	spec.Description = description(f, name)
	if spec.Description == "" {
		c.problem(f.Package, "missing package comment: start the file with // Package %s <does what>.", name)
	}

	contextName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		spec.Imports = append(spec.Imports, path)
		if !Allowed(path) {
			c.problem(imp.Pos(), "import %q is not allowed; allowed: %s", path, strings.Join(AllowedImports(), ", "))
		}
		if imp.Name != nil && (imp.Name.Name == "." || imp.Name.Name == "_") {
			c.problem(imp.Pos(), "import %q: dot and blank imports are not allowed", path)
		}
		if path == "context" {
			contextName = "context"
			if imp.Name != nil {
				contextName = imp.Name.Name
			}
		}
	}

	var execute *ast.FuncDecl
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					c.types[s.Name.Name] = s
				case *ast.ValueSpec:
					if d.Tok == token.CONST {
						c.constant(s, spec)
					}
				}
			}
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == "Execute" {
				execute = d
			}
		}
	}

	input, ok := c.types["Input"]
	if !ok {
		c.problem(f.Package, "missing `type Input struct { ... }`: the tool's parameters")
	} else if _, isStruct := input.Type.(*ast.StructType); !isStruct {
		c.problem(input.Pos(), "Input must be a struct type")
	} else {
		spec.Parameters = c.marshal(input, c.schema(inputShape, input.Type, 0))
	}

	if execute == nil {
		c.problem(f.Package, "missing `func Execute(ctx context.Context, in Input) (T, error)`")
	} else if c.signature(execute, contextName) {
		spec.Output = c.output(execute.Pos())
	}
	if pkg := toolkitImport(f); pkg != "" {
		c.toolkit(f, pkg, spec)
	}

	if len(c.problems) > 0 {
		return spec, &Error{Tool: name, Problems: c.problems}
	}
	return spec, nil
}

// description returns the package comment without the conventional lead.
func description(f *ast.File, name string) string {
	if f.Doc == nil {
		return ""
	}
	text := strings.TrimSpace(f.Doc.Text())
	text = strings.Join(strings.Fields(text), " ")
	for _, lead := range []string{"Package " + name + " ", "Package " + name + ": "} {
		if strings.HasPrefix(text, lead) {
			rest := strings.TrimSpace(strings.TrimPrefix(text, lead))
			if rest != "" {
				return strings.ToUpper(rest[:1]) + rest[1:]
			}
		}
	}
	return text
}

type checker struct {
	fset     *token.FileSet
	name     string
	types    map[string]*ast.TypeSpec
	problems []string
}

func (c *checker) problem(pos token.Pos, format string, args ...any) {
	p := c.fset.Position(pos)
	c.problems = append(c.problems, fmt.Sprintf("%d:%d: %s", p.Line, p.Column, fmt.Sprintf(format, args...)))
}

// constant reads the optional metadata constants Category, Timeout, Hosts
// and Direct.
func (c *checker) constant(s *ast.ValueSpec, spec *Spec) {
	for i, n := range s.Names {
		if i >= len(s.Values) {
			return
		}
		switch n.Name {
		case "Category":
			lit, ok := s.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				c.problem(n.Pos(), "Category must be a string literal")
				continue
			}
			spec.Category, _ = strconv.Unquote(lit.Value)
		case "Timeout":
			d, err := durationExpr(s.Values[i])
			if err != nil || d <= 0 {
				c.problem(n.Pos(), "Timeout must be a positive duration such as 2 * time.Second or \"2s\"")
				continue
			}
			spec.Timeout = d
		case "Hosts":
			lit, ok := s.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				c.problem(n.Pos(), "Hosts must be a string literal such as \"api.example.com, hooks.example.org\"")
				continue
			}
			v, _ := strconv.Unquote(lit.Value)
			hosts, err := ParseHosts(v)
			if err != nil {
				c.problem(n.Pos(), "%v", err)
				continue
			}
			spec.Hosts = hosts
		case "Direct":
			id, ok := s.Values[i].(*ast.Ident)
			if !ok || (id.Name != "true" && id.Name != "false") {
				c.problem(n.Pos(), "Direct must be true or false (false: the tool's output is never shown as the answer)")
				continue
			}
			spec.NoDirect = id.Name == "false"
		}
	}
}

var units = map[string]time.Duration{
	"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
}

// durationExpr evaluates the small constant forms a Timeout may take.
func durationExpr(e ast.Expr) (time.Duration, error) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return durationExpr(e.X)
	case *ast.BasicLit:
		switch e.Kind {
		case token.STRING:
			s, _ := strconv.Unquote(e.Value)
			return time.ParseDuration(s)
		case token.INT:
			n, err := strconv.ParseInt(e.Value, 0, 64)
			return time.Duration(n), err
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" {
			if u, ok := units[e.Sel.Name]; ok {
				return u, nil
			}
		}
	case *ast.BinaryExpr:
		if e.Op == token.MUL {
			a, err := durationExpr(e.X)
			if err != nil {
				return 0, err
			}
			b, err := durationExpr(e.Y)
			if err != nil {
				return 0, err
			}
			return a * b, nil
		}
	}
	return 0, errors.New("unsupported duration expression")
}

// marshal encodes the schema derived for the type ts.
func (c *checker) marshal(ts *ast.TypeSpec, n *node) json.RawMessage {
	raw, err := json.Marshal(n)
	if err != nil {
		c.problem(ts.Pos(), "%s schema: %v", ts.Name.Name, err)
	}
	return raw
}

// output derives the schema of Output when Execute returns it (the
// signature checked): a struct, as MCP wants an object for structured
// results.
func (c *checker) output(execute token.Pos) json.RawMessage {
	out := c.types["Output"]
	if out == nil {
		c.problem(execute, "Execute returns Output, but `type Output struct { ... }` is not declared")
		return nil
	}
	if _, isStruct := out.Type.(*ast.StructType); !isStruct {
		c.problem(out.Pos(), "Output must be a struct type: its fields are the result's JSON object")
		return nil
	}
	return c.marshal(out, c.schema(outputShape, out.Type, 0))
}

// signature checks Execute's signature and reports whether it returns
// (Output, error).
func (c *checker) signature(fn *ast.FuncDecl, contextName string) (returnsOutput bool) {
	const want = "func Execute(ctx context.Context, in Input) (T, error)"
	var params []ast.Expr
	for _, f := range fn.Type.Params.List {
		n := len(f.Names)
		if n == 0 {
			n = 1
		}
		for i := 0; i < n; i++ {
			params = append(params, f.Type)
		}
	}
	if fn.Type.TypeParams != nil {
		c.problem(fn.Pos(), "Execute must not be generic; want %s", want)
	}
	if len(params) != 2 {
		c.problem(fn.Pos(), "Execute takes %d parameters; want %s", len(params), want)
	} else {
		if sel, ok := params[0].(*ast.SelectorExpr); !ok || contextName == "" || !isIdent(sel.X, contextName) || sel.Sel.Name != "Context" {
			c.problem(params[0].Pos(), "first parameter of Execute must be context.Context; want %s", want)
		}
		if !isIdent(params[1], "Input") {
			c.problem(params[1].Pos(), "second parameter of Execute must be Input; want %s", want)
		}
	}
	var results []ast.Expr
	if fn.Type.Results != nil {
		for _, f := range fn.Type.Results.List {
			n := len(f.Names)
			if n == 0 {
				n = 1
			}
			for i := 0; i < n; i++ {
				results = append(results, f.Type)
			}
		}
	}
	if len(results) != 2 || !isIdent(results[1], "error") {
		c.problem(fn.Pos(), "Execute must return a value and an error; want %s", want)
		return false
	}
	if fn.Body == nil {
		c.problem(fn.Pos(), "Execute has no body")
	}
	return isIdent(results[0], "Output")
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// Summary returns the first sentence of a description, or its first max
// characters cut at a word, for places that list many tools.
func Summary(desc string, max int) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if i := strings.Index(desc, ". "); i > 0 && i < max {
		return desc[:i+1]
	}
	r := []rune(desc)
	if len(r) <= max {
		return desc
	}
	cut := string(r[:max])
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return cut + "…"
}
