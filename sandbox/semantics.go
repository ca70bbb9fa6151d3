package sandbox

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"reflect"
	"sort"
	"strings"
)

// Yaegi (see third_party/yaegi) interprets the Go of 1.21 with a few
// additions of ours (range over an integer, a linear range over a string).
// What it still lacks is made up here, by rewriting a tool's source before
// it is interpreted, exactly, or by refusing it with a message that tells
// the model what to change: a wrong answer is never served.
//
//   - Loop variables (Go 1.22): each iteration of a `for` loop that declares
//     its variables (`:=`) has its own copy. Yaegi shares one variable
//     across the loop, which only shows when the body captures a variable
//     in a closure or takes its address, so only then is a copy declared
//     at the top of the body (`i := i`). A three-clause loop whose body
//     also changes the variable cannot be copied that way (the change must
//     reach the next iteration): it is refused.
//   - min and max (Go 1.21) become calls of generic functions appended to
//     the file; clear (Go 1.21) a call of the host's reflect-based clear.
//
// Every edit keeps the lines of the source where they were (insertions
// go on the same line), so that a compile error's line:column still points
// at what the model wrote.

// Names the rewrite gives to the helpers it adds to a tool's package.
const (
	minHelper   = "adaptbotMin"
	maxHelper   = "adaptbotMax"
	clearHelper = hostAlias + ".Clear"
)

// helpers are the generic min and max, in a form Yaegi compiles. A NaN
// among the arguments is the result, as with the builtins.
const helpers = `

type adaptbotOrdered interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr | ~float32 | ~float64 | ~string
}

func adaptbotMin[T adaptbotOrdered](x T, y ...T) T {
	for _, v := range y {
		if x != x {
			return x
		}
		if v != v || v < x {
			x = v
		}
	}
	return x
}

func adaptbotMax[T adaptbotOrdered](x T, y ...T) T {
	for _, v := range y {
		if x != x {
			return x
		}
		if v != v || v > x {
			x = v
		}
	}
	return x
}
`

// SemanticsError lists the constructs of a tool's source that the sandbox
// cannot run with the meaning Go gives them, each with what to change.
type SemanticsError struct {
	Problems []string
}

func (e *SemanticsError) Error() string {
	return strings.Join(e.Problems, "\n")
}

// CheckSemantics reports, one a line with its line:column, what in src the
// sandbox refuses because it cannot run it with Go's meaning; nil when it
// can run all of it. The gate calls it so the model hears of it with the
// other problems of its tool.
func CheckSemantics(src []byte) []string {
	_, err := rewriteSemantics(src)
	if se, ok := err.(*SemanticsError); ok {
		return se.Problems
	}
	return nil
}

// edit inserts text at a byte offset, or replaces the bytes [at, end).
type edit struct {
	at, end int
	text    string
}

// rewriteSemantics returns src rewritten for Yaegi as described above, or
// a *SemanticsError. A source that does not parse is returned as it is:
// the interpreter reports that itself.
func rewriteSemantics(src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "tool.go", src, 0)
	if err != nil {
		return src, nil
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	var edits []edit
	var problems []string
	needHelpers, needHost := false, false

	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.RangeStmt:
			if n.Tok != token.DEFINE {
				return true
			}
			var copies []string
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok && id.Name != "_" && captured(n.Body, id.Obj) {
					copies = append(copies, id.Name)
				}
			}
			if len(copies) > 0 {
				edits = append(edits, edit{at: off(n.Body.Lbrace) + 1, end: off(n.Body.Lbrace) + 1,
					text: fmt.Sprintf(" %[1]s := %[1]s;", strings.Join(copies, ", "))})
			}
		case *ast.ForStmt:
			init, ok := n.Init.(*ast.AssignStmt)
			if !ok || init.Tok != token.DEFINE {
				return true
			}
			var copies []string
			for _, e := range init.Lhs {
				id, ok := e.(*ast.Ident)
				if !ok || id.Name == "_" {
					continue
				}
				inHeader := false
				for _, h := range []ast.Node{n.Cond, n.Post} {
					if h != nil && captured(h, id.Obj) {
						inHeader = true
					}
				}
				if inHeader {
					p := fset.Position(n.Pos())
					problems = append(problems, fmt.Sprintf("%d:%d: the loop variable %s is captured by a closure (or its address taken) in the loop's condition or post statement; the sandbox cannot give that Go 1.22's per-iteration meaning exactly: compute the condition and the step without a closure or a pointer to %s", p.Line, p.Column, id.Name, id.Name))
					continue
				}
				if !captured(n.Body, id.Obj) {
					continue
				}
				if changed(n.Body, id.Obj) {
					p := fset.Position(n.Pos())
					problems = append(problems, fmt.Sprintf("%d:%d: the loop variable %s is both changed in the loop body and captured by a closure (or its address taken); the sandbox cannot give that Go 1.22's per-iteration meaning exactly: change %s only in the loop's post statement, or capture a copy made in the body (v := %s) and leave the loop variable alone", p.Line, p.Column, id.Name, id.Name, id.Name))
					continue
				}
				copies = append(copies, id.Name)
			}
			if len(copies) > 0 {
				edits = append(edits, edit{at: off(n.Body.Lbrace) + 1, end: off(n.Body.Lbrace) + 1,
					text: fmt.Sprintf(" %[1]s := %[1]s;", strings.Join(copies, ", "))})
			}
		case *ast.CallExpr:
			id, ok := n.Fun.(*ast.Ident)
			if !ok || id.Obj != nil {
				return true // a call of something the tool declared
			}
			if (id.Name == "min" || id.Name == "max") && len(n.Args) == 1 && n.Ellipsis == token.NoPos {
				// min(x) is x; Yaegi cannot call a generic variadic
				// function with no variadic argument.
				edits = append(edits, edit{at: off(id.Pos()), end: off(id.End()), text: ""})
				return true
			}
			if id.Name == "min" || id.Name == "max" {
				if text, ok := constantMinMax(id.Name, n.Args, src, off); ok {
					// All constants: Go's answer is a constant too.
					edits = append(edits, edit{at: off(n.Pos()), end: off(n.End()), text: text})
					return false
				}
				edits = append(edits, constantLast(n, src, off)...)
			}
			switch id.Name {
			case "min":
				edits = append(edits, edit{at: off(id.Pos()), end: off(id.End()), text: minHelper})
				needHelpers = true
			case "max":
				edits = append(edits, edit{at: off(id.Pos()), end: off(id.End()), text: maxHelper})
				needHelpers = true
			case "clear":
				edits = append(edits, edit{at: off(id.Pos()), end: off(id.End()), text: clearHelper})
				needHost = true
			}
		}
		return true
	})
	if len(problems) > 0 {
		return nil, &SemanticsError{Problems: problems}
	}
	if needHost {
		// On the package clause's line, so every later line stays put.
		at := off(f.Name.End())
		edits = append(edits, edit{at: at, end: at, text: fmt.Sprintf("; import %s %q", hostAlias, hostPath)})
	}
	if len(edits) == 0 && !needHelpers {
		return src, nil
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
	out := []byte(string(src))
	for _, e := range edits {
		out = append(out[:e.at], append([]byte(e.text), out[e.end:]...)...)
	}
	if needHelpers {
		out = append(out, helpers...)
	}
	return out, nil
}

// constantLast returns the edits that make call's first argument, when it
// is an untyped constant and a later one is not, trade places with the
// first argument that is not: Yaegi infers the helper's type from its
// first argument, and an untyped constant there gives "untyped float does
// not implement" for max(0, f), where Go takes f's type. Only literals are
// moved past, so nothing is evaluated out of order; an argument holding
// edits of its own (a nested min, a closure) is left where it is.
func constantLast(call *ast.CallExpr, src []byte, off func(token.Pos) int) []edit {
	if len(call.Args) < 2 || call.Ellipsis != token.NoPos || !isLiteral(call.Args[0]) {
		return nil
	}
	for _, a := range call.Args[1:] {
		if isLiteral(a) {
			continue
		}
		nested := false
		ast.Inspect(a, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.FuncLit:
				nested = true
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "min" || id.Name == "max" || id.Name == "clear") {
					nested = true
				}
			}
			return !nested
		})
		if nested {
			return nil
		}
		first := call.Args[0]
		return []edit{
			{at: off(first.Pos()), end: off(first.End()), text: string(src[off(a.Pos()):off(a.End())])},
			{at: off(a.Pos()), end: off(a.End()), text: string(src[off(first.Pos()):off(first.End())])},
		}
	}
	return nil
}

// constantMinMax returns, when every argument of min or max (fn) is a
// literal, the constant the call is, as Go source: the winning argument's
// own text, made of the kind of the call's result, which is the highest
// of the arguments' kinds (integer, rune, floating-point): + 0.0 or
// + '\x00' is added when the winner's kind is lower. Yaegi's helper would
// take its type from the first argument: max(1, 2.5) gave 2.
func constantMinMax(fn string, args []ast.Expr, src []byte, off func(token.Pos) int) (string, bool) {
	if len(args) < 2 {
		return "", false
	}
	op := token.LSS
	if fn == "max" {
		op = token.GTR
	}
	var best constant.Value
	bestText, bestRank, kind := "", 0, 0
	for _, a := range args {
		lit := innerLiteral(a)
		if !isLiteral(a) || lit == nil {
			return "", false
		}
		r := map[token.Token]int{token.STRING: 0, token.INT: 1, token.CHAR: 2, token.FLOAT: 3}[lit.Kind]
		v := literalValue(a)
		if lit.Kind == token.IMAG || v.Kind() == constant.Unknown || best != nil && (r == 0) != (bestRank == 0) {
			return "", false // complex, or strings with numbers: the compiler says what is wrong
		}
		kind = max(kind, r)
		if best == nil || constant.Compare(v, op, best) {
			best, bestText, bestRank = v, string(src[off(a.Pos()):off(a.End())]), r
		}
	}
	switch {
	case bestRank < kind && kind == 3:
		return "(" + bestText + " + 0.0)", true
	case bestRank < kind && kind == 2:
		return "(" + bestText + " + '\\x00')", true
	}
	return "(" + bestText + ")", true
}

// innerLiteral is the literal inside a signed or parenthesized one.
func innerLiteral(e ast.Expr) *ast.BasicLit {
	for {
		switch x := e.(type) {
		case *ast.BasicLit:
			return x
		case *ast.ParenExpr:
			e = x.X
		case *ast.UnaryExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// literalValue is the constant value of a literal isLiteral accepts.
func literalValue(e ast.Expr) constant.Value {
	switch x := e.(type) {
	case *ast.BasicLit:
		return constant.MakeFromLiteral(x.Value, x.Kind, 0)
	case *ast.ParenExpr:
		return literalValue(x.X)
	case *ast.UnaryExpr:
		return constant.UnaryOp(x.Op, literalValue(x.X), 0)
	}
	return constant.MakeUnknown()
}

// isLiteral reports whether e is a literal number, rune or string, maybe
// signed or in parentheses.
func isLiteral(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return isLiteral(x.X)
	case *ast.UnaryExpr:
		return (x.Op == token.SUB || x.Op == token.ADD) && isLiteral(x.X)
	}
	return false
}

// captured reports whether the variable obj may outlive or be shared
// beyond one iteration within n: it is named inside a function literal, its
// address is taken, or it is the operand of a selector or a slice
// expression (a method with a pointer receiver, or slicing an array, takes
// its address without an &).
func captured(n ast.Node, obj *ast.Object) bool {
	if obj == nil || n == nil {
		return false
	}
	found := false
	ast.Inspect(n, func(x ast.Node) bool {
		if found {
			return false
		}
		switch x := x.(type) {
		case *ast.FuncLit:
			if refers(x.Body, obj) {
				found = true
			}
			return false
		case *ast.UnaryExpr:
			if x.Op == token.AND && refers(x.X, obj) {
				found = true
			}
		case *ast.SelectorExpr:
			if isObj(x.X, obj) {
				found = true
			}
		case *ast.SliceExpr:
			if isObj(x.X, obj) {
				found = true
			}
		}
		return true
	})
	return found
}

// changed reports whether n assigns to the variable obj (or to a part of
// it), increments or decrements it, or takes its address.
func changed(n ast.Node, obj *ast.Object) bool {
	found := false
	ast.Inspect(n, func(x ast.Node) bool {
		if found {
			return false
		}
		switch x := x.(type) {
		case *ast.AssignStmt:
			for _, l := range x.Lhs {
				if isObj(root(l), obj) {
					found = true
				}
			}
		case *ast.IncDecStmt:
			if isObj(root(x.X), obj) {
				found = true
			}
		case *ast.UnaryExpr:
			if x.Op == token.AND && isObj(root(x.X), obj) {
				found = true
			}
		case *ast.RangeStmt:
			if x.Tok == token.ASSIGN && (isObj(root(x.Key), obj) || isObj(root(x.Value), obj)) {
				found = true
			}
		}
		return true
	})
	return found
}

// root is the variable at the base of an assignable expression: x of
// x.f[i].g.
func root(e ast.Expr) ast.Expr {
	for {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return e
		}
	}
}

func isObj(e ast.Expr, obj *ast.Object) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Obj == obj
}

func refers(n ast.Node, obj *ast.Object) bool {
	found := false
	ast.Inspect(n, func(x ast.Node) bool {
		if id, ok := x.(*ast.Ident); ok && id.Obj == obj {
			found = true
		}
		return !found
	})
	return found
}

// clearValue is the builtin clear of Go 1.21 for interpreted code: it
// deletes every entry of a map, and sets every element of a slice to its
// zero value. A nil map or slice is left alone, as by the builtin.
func clearValue(v any) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice:
		rv.Clear()
	}
}
