package contract

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// CallFuncs are the toolkit functions by which a tool calls another tool;
// the tool's name is their second argument.
var CallFuncs = []string{"Call", "CallJSON"}

// Calls returns the tools src calls — the names passed to toolkit.Call and
// toolkit.CallJSON — each once, sorted. So that the tools a tool uses are
// known before it runs (the registry records them, the gate checks they
// exist, a change to one re-runs the examples of the tools that use it),
// each name must be a string literal, or a constant of the file that is
// one; and toolkit.Call and CallJSON may only be called, not passed around.
// Every way src breaks that is a problem of the *Error returned, as is a
// tool calling itself. A source that does not parse returns the parser's
// error, as Parse does.
func Calls(name string, src []byte) ([]string, error) {
	sites, err := CallSites(name, src)
	uses := make([]string, 0, len(sites))
	for _, s := range sites {
		uses = append(uses, s.Tool)
	}
	return uses, err
}

// CallSite is a tool a source calls, and where it first does.
type CallSite struct {
	Tool string
	// Pos is "line:column" of the name in the source.
	Pos string
}

// CallSites is Calls with the place of each tool's first call, sorted by
// tool.
func CallSites(name string, src []byte) ([]CallSite, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	pkg := toolkitImport(f)
	if pkg == "" {
		return nil, nil
	}
	c := checker{fset: fset, name: name}
	sites := c.callSites(f, pkg)
	if len(c.problems) > 0 {
		return sites, &Error{Tool: name, Problems: c.problems}
	}
	return sites, nil
}

// toolkitImport is the name under which f imports package toolkit, or ""
// when it does not (or imports it as _ or .).
func toolkitImport(f *ast.File) string {
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == ToolkitPath {
			pkg := "toolkit"
			if imp.Name != nil {
				pkg = imp.Name.Name
			}
			if pkg == "_" || pkg == "." {
				return ""
			}
			return pkg
		}
	}
	return ""
}

// callSites finds the tools f calls through package toolkit, imported as
// pkg, and records as problems every way it breaks the rules of Calls.
func (c *checker) callSites(f *ast.File, pkg string) []CallSite {
	name := c.name
	consts := stringConsts(f)
	called := map[*ast.SelectorExpr]bool{}
	seen := map[string]token.Pos{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := callFunc(call.Fun, pkg)
		if !ok {
			return true
		}
		called[sel] = true
		fn := pkg + "." + sel.Sel.Name
		if len(call.Args) < 2 {
			c.problem(call.Pos(), "%s needs the tool's name as its second argument: %s(ctx, \"unit_converter\", args)", fn, fn)
			return true
		}
		callee, ok := calleeName(call.Args[1], consts)
		switch {
		case !ok:
			c.problem(call.Args[1].Pos(), "%s must name its tool with a string literal (or a constant holding one), such as %s(ctx, \"unit_converter\", args): the tools a tool uses must be known before it runs", fn, fn)
		case !validCallee(callee):
			c.problem(call.Args[1].Pos(), "%s(ctx, %q, ...): %q cannot name a tool (a tool's snake_case name, or an external server's tool as server__tool)", fn, callee, callee)
		case callee == name:
			c.problem(call.Args[1].Pos(), "%s calls %s itself: a tool may not call itself", name, name)
		default:
			if _, ok := seen[callee]; !ok {
				seen[callee] = call.Args[1].Pos()
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := callFunc(exprOf(n), pkg); ok && !called[sel] {
			c.problem(sel.Pos(), "%s.%s may only be called, not used as a value: the tools a tool uses must be known before it runs", pkg, sel.Sel.Name)
		}
		return true
	})
	sites := make([]CallSite, 0, len(seen))
	for u, pos := range seen {
		p := c.fset.Position(pos)
		sites = append(sites, CallSite{Tool: u, Pos: fmt.Sprintf("%d:%d", p.Line, p.Column)})
	}
	sort.Slice(sites, func(i, j int) bool { return sites[i].Tool < sites[j].Tool })
	return sites
}

// MissingCallees lists, as problems like the contract's, each tool src
// calls that exists says does not exist: a new or changed tool may not
// name a tool that is not there, as it may not import a package that is
// not allowed.
func MissingCallees(name string, src []byte, exists func(tool string) bool) []string {
	sites, _ := CallSites(name, src)
	var out []string
	for _, s := range sites {
		if !exists(s.Tool) {
			out = append(out, fmt.Sprintf("%s: calls %s, and there is no tool named %q; call only the tools there are", s.Pos, s.Tool, s.Tool))
		}
	}
	return out
}

// RenameCalls returns src with the tools it calls renamed: each string
// literal that names, by the rules of Calls, a tool that rename maps to a
// new name (passed to toolkit.Call or CallJSON, or held by a constant so
// passed) names the new one. Every other byte stays as it was.
func RenameCalls(name string, src []byte, rename map[string]string) ([]byte, error) {
	if len(rename) == 0 {
		return src, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	pkg := toolkitImport(f)
	if pkg == "" {
		return src, nil
	}
	consts := stringConsts(f)
	renamed := map[*ast.BasicLit]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) < 2 {
			return true
		}
		if _, ok := callFunc(call.Fun, pkg); !ok {
			return true
		}
		if lit := calleeLit(call.Args[1], consts); lit != nil {
			if old, err := strconv.Unquote(lit.Value); err == nil && rename[old] != "" {
				renamed[lit] = rename[old]
			}
		}
		return true
	})
	lits := slices.SortedFunc(maps.Keys(renamed), func(a, b *ast.BasicLit) int { return int(b.Pos() - a.Pos()) })
	out := slices.Clone(src)
	for _, lit := range lits { // from the end, so that offsets hold
		from, to := fset.Position(lit.Pos()).Offset, fset.Position(lit.End()).Offset
		out = slices.Concat(out[:from], []byte(strconv.Quote(renamed[lit])), out[to:])
	}
	return out, nil
}

// callFunc reports whether e is toolkit.Call or CallJSON, with package
// toolkit imported as pkg.
func callFunc(e ast.Expr, pkg string) (*ast.SelectorExpr, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || !isIdent(sel.X, pkg) || !slices.Contains(CallFuncs, sel.Sel.Name) {
		return nil, false
	}
	return sel, true
}

func exprOf(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}

// calleeName reads the tool name of a call: a string literal, or a
// constant of the file holding one.
func calleeName(e ast.Expr, consts map[string]*ast.BasicLit) (string, bool) {
	lit := calleeLit(e, consts)
	if lit == nil {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// calleeLit is the string literal that names the tool of a call: the
// argument itself, or the one a constant of the file holds.
func calleeLit(e ast.Expr, consts map[string]*ast.BasicLit) *ast.BasicLit {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return calleeLit(e.X, consts)
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			return e
		}
	case *ast.Ident:
		return consts[e.Name]
	}
	return nil
}

// stringConsts are the constants of f, at any level, whose value is a
// string literal, with that literal. A name declared twice (in two
// functions) is left out: which one a call means would need scopes.
func stringConsts(f *ast.File) map[string]*ast.BasicLit {
	out := map[string]*ast.BasicLit{}
	twice := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		d, ok := n.(*ast.GenDecl)
		if !ok || d.Tok != token.CONST {
			return true
		}
		for _, s := range d.Specs {
			vs := s.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				if _, dup := out[id.Name]; dup {
					twice[id.Name] = true
				}
				out[id.Name] = lit
			}
		}
		return true
	})
	for n := range twice {
		delete(out, n)
	}
	return out
}

// validCallee reports whether s can name a tool in a call: a local tool's
// name, or an external server's tool as "server/tool" or "server__tool",
// each half printable, without spaces or slashes, at most 200 bytes in all.
func validCallee(s string) bool {
	if ValidName(s) == nil {
		return true
	}
	if len(s) > 200 {
		return false
	}
	server, tool, ok := strings.Cut(s, "/")
	if !ok {
		server, tool, ok = strings.Cut(s, "__")
	}
	if !ok || server == "" || tool == "" || server == "." || server == ".." || strings.Contains(tool, "/") {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
