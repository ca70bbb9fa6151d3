package contract

import (
	"go/ast"
	"go/token"
	"sort"
)

// What a tool reaches through package toolkit, read from its source: the
// network (Get, GetJSON, Do, PostJSON) and other tools (Call, CallJSON, by the rules of
// Calls). Doors that describe a tool to others (MCP annotations, an export
// that must bring a tool's callees along) rely on it, so a call whose
// target cannot be read from the source is a problem, not a guess.

// networkFuncs are the toolkit functions that reach the network.
var networkFuncs = map[string]bool{"Get": true, "GetJSON": true, "Do": true, "PostJSON": true}

// toolkit records in spec what the source uses of package toolkit, imported
// as pkg: the functions (Toolkit), whether one reaches the network
// (Network), and the tools it calls (Calls).
func (c *checker) toolkit(f *ast.File, pkg string, spec *Spec) {
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && isIdent(sel.X, pkg) {
			used[sel.Sel.Name] = true
		}
		return true
	})
	for name := range used {
		spec.Toolkit = append(spec.Toolkit, name)
		spec.Network = spec.Network || networkFuncs[name]
	}
	sort.Strings(spec.Toolkit)
	for _, s := range c.callSites(f, pkg) {
		spec.Calls = append(spec.Calls, s.Tool)
	}
	changes, how := c.acting(f, pkg, spec)
	switch {
	case len(spec.Hosts) > 0:
	case changes != token.NoPos:
		c.problem(changes, "%s: a tool that sends anything but GET or HEAD must declare the hosts it reaches, such as const Hosts = \"hooks.example.org\"", how)
	case len(spec.Secrets) > 0:
		c.problem(f.Package, "the tool uses the secret %s: a tool that uses a secret must declare the hosts it reaches, such as const Hosts = \"api.example.com\" (the secret's value goes to no other)", spec.Secrets[0])
	}
}
