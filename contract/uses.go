package contract

import (
	"go/ast"
	"go/token"
	"sort"
	"strconv"
)

// What a tool reaches through package toolkit, read from its source: the
// network (Get, GetJSON) and other tools (Call, CallJSON). Doors that
// describe a tool to others (MCP annotations, an export that must bring a
// tool's callees along) rely on it, so a call whose target cannot be read
// from the source is a problem, not a guess.

// networkFuncs are the toolkit functions that reach the network.
var networkFuncs = map[string]bool{"Get": true, "GetJSON": true}

// callFuncs are the toolkit functions that call another tool by name; the
// name is their second argument.
var callFuncs = map[string]bool{"Call": true, "CallJSON": true}

// toolkit records in spec what the source uses of package toolkit, imported
// as pkg.
func (c *checker) toolkit(f *ast.File, pkg string, spec *Spec) {
	consts := stringConsts(f)
	used := map[string]bool{}
	calls := map[string]bool{}
	called := map[*ast.SelectorExpr]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := toolkitSelector(call.Fun, pkg)
		if !ok || !callFuncs[sel.Sel.Name] {
			return true
		}
		called[sel] = true
		if len(call.Args) < 2 {
			return true // the compiler says what is missing
		}
		name, ok := stringValue(call.Args[1], consts)
		switch {
		case !ok:
			c.problem(call.Args[1].Pos(), "the tool name given to toolkit.%s must be a string literal or a constant, so that the tools it calls are known before it runs", sel.Sel.Name)
		case ValidName(name) != nil:
			c.problem(call.Args[1].Pos(), "toolkit.%s calls %q, which is not a tool name: %v", sel.Sel.Name, name, ValidName(name))
		default:
			calls[name] = true
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := toolkitSelector(n, pkg)
		if !ok {
			return true
		}
		used[sel.Sel.Name] = true
		if callFuncs[sel.Sel.Name] && !called[sel] {
			c.problem(sel.Pos(), "toolkit.%s may only be called directly, with the tool's name written out, so that the tools it calls are known", sel.Sel.Name)
		}
		return true
	})
	for name := range used {
		spec.Toolkit = append(spec.Toolkit, name)
		spec.Network = spec.Network || networkFuncs[name]
	}
	for name := range calls {
		spec.Calls = append(spec.Calls, name)
	}
	sort.Strings(spec.Toolkit)
	sort.Strings(spec.Calls)
}

// toolkitSelector reports whether n is pkg.Name.
func toolkitSelector(n ast.Node, pkg string) (*ast.SelectorExpr, bool) {
	sel, ok := n.(*ast.SelectorExpr)
	if !ok || !isIdent(sel.X, pkg) {
		return nil, false
	}
	return sel, true
}

// stringConsts maps the package-level string constants declared with a
// literal to their values.
func stringConsts(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return out
}

// stringValue reads e as a string literal or a constant from consts.
func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.Ident:
		s, ok := consts[e.Name]
		return s, ok
	case *ast.ParenExpr:
		return stringValue(e.X, consts)
	}
	return "", false
}
