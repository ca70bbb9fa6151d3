// Package calculator evaluates an arithmetic expression and returns it with its
// result, such as "2 + 3 * 4 = 14". It knows + - * / with the usual
// precedence, parentheses, unary minus, ^ or ** for powers (right-associative,
// so 2^3^2 = 2^9 and -2^2 = -4), % for the remainder, the constants pi and e,
// and the functions sqrt, cbrt, abs, exp, ln and log (natural logarithm), log10,
// log2, sin, cos, tan, asin, acos, atan (radians), floor, ceil, round (half away
// from zero; round(x, n) keeps n decimals), and min and max of any number of
// arguments. Use it for any arithmetic instead of computing in your head.
package calculator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Category is the tool's domain.
const Category = "math"

// Input is the expression to evaluate.
type Input struct {
	Expression string `json:"expression" jsonschema:"the arithmetic expression, e.g. (2 + 3) * sqrt(16) / 2^3 or max(3, 7) % 4"`
}

// Execute evaluates in.Expression and returns "<expression> = <result>".
func Execute(ctx context.Context, in Input) (string, error) {
	if strings.TrimSpace(in.Expression) == "" {
		return "", errors.New("the expression is empty")
	}
	if len(in.Expression) > maxLength {
		return "", fmt.Errorf("the expression is %d bytes long; the limit is %d", len(in.Expression), maxLength)
	}
	// Positions in errors count characters of the expression as given.
	v, err := evaluate(in.Expression)
	if err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(in.Expression), " ") + " = " + format(v), nil
}

const (
	maxLength = 2000
	// maxDepth bounds nesting, so a pathological input fails with an error
	// instead of exhausting the interpreter's stack.
	maxDepth = 200
)

// evaluate parses and evaluates expr.
func evaluate(expr string) (float64, error) {
	toks, err := tokenize(expr)
	if err != nil {
		return 0, err
	}
	p := &parser{toks: toks}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEnd {
		return 0, p.unexpected(t)
	}
	if math.IsNaN(v) {
		return 0, errors.New("the result is not a real number")
	}
	if math.IsInf(v, 0) {
		return 0, errors.New("the result is too large to represent")
	}
	return v, nil
}

// format writes v the way a person would: at most 12 significant digits, no
// trailing zeros, no exponent between 1e-6 and 1e21.
func format(v float64) string {
	if v == 0 {
		return "0" // also turns -0 into 0
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		r = v
	}
	if a := math.Abs(r); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

type tokKind int

const (
	tokEnd tokKind = iota
	tokNum
	tokIdent
	tokOp // one of + - * / % ^ ( ) ,
)

type token struct {
	kind tokKind
	text string  // the operator, the lower-cased name, or the number as written
	num  float64 // for tokNum
	pos  int     // 1-based position in characters
}

// tokenize splits expr into tokens; ×, ÷ and the Unicode minus sign are read
// as *, / and -, and ** as ^.
func tokenize(expr string) ([]token, error) {
	rs := []rune(expr)
	var toks []token
	i := 0
	for i < len(rs) {
		r := rs[i]
		pos := i + 1
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '*' && i+1 < len(rs) && rs[i+1] == '*':
			toks = append(toks, token{kind: tokOp, text: "^", pos: pos})
			i += 2
		case strings.ContainsRune("+-*/%^(),", r):
			toks = append(toks, token{kind: tokOp, text: string(r), pos: pos})
			i++
		case r == '×' || r == '·':
			toks = append(toks, token{kind: tokOp, text: "*", pos: pos})
			i++
		case r == '÷':
			toks = append(toks, token{kind: tokOp, text: "/", pos: pos})
			i++
		case r == '−':
			toks = append(toks, token{kind: tokOp, text: "-", pos: pos})
			i++
		case r == 'π':
			toks = append(toks, token{kind: tokIdent, text: "pi", pos: pos})
			i++
		case isDigit(r) || r == '.':
			j := scanNumber(rs, i)
			text := string(rs[i:j])
			v, err := strconv.ParseFloat(text, 64)
			if err != nil {
				if errors.Is(err, strconv.ErrRange) {
					return nil, fmt.Errorf("number %q at position %d is too large", text, pos)
				}
				return nil, fmt.Errorf("malformed number %q at position %d", text, pos)
			}
			toks = append(toks, token{kind: tokNum, text: text, num: v, pos: pos})
			i = j
		case unicode.IsLetter(r) || r == '_':
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || isDigit(rs[j]) || rs[j] == '_') {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: strings.ToLower(string(rs[i:j])), pos: pos})
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q at position %d", r, pos)
		}
	}
	return append(toks, token{kind: tokEnd, pos: len(rs) + 1}), nil
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// scanNumber returns the end of the number starting at rs[i]: digits, one
// decimal point, and an exponent such as e-3 if digits follow it (so that
// "2e" stays the number 2 followed by the name e).
func scanNumber(rs []rune, i int) int {
	j := i
	dot := false
	for j < len(rs) && (isDigit(rs[j]) || (rs[j] == '.' && !dot)) {
		if rs[j] == '.' {
			dot = true
		}
		j++
	}
	if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
		k := j + 1
		if k < len(rs) && (rs[k] == '+' || rs[k] == '-') {
			k++
		}
		if k < len(rs) && isDigit(rs[k]) {
			for k < len(rs) && isDigit(rs[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

// parser is a recursive-descent parser that evaluates as it goes:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ "^" unary ]
//	primary = number | name | name "(" expr { "," expr } ")" | "(" expr ")"
type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEnd {
		p.i++
	}
	return t
}

func (p *parser) isOp(ops string) bool {
	t := p.peek()
	return t.kind == tokOp && strings.Contains(ops, t.text)
}

func (p *parser) unexpected(t token) error {
	if t.kind == tokEnd {
		return errors.New("unexpected end of expression: expected a number, a name or '('")
	}
	return fmt.Errorf("unexpected '%s' at position %d", t.text, t.pos)
}

func (p *parser) expr() (float64, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return 0, fmt.Errorf("the expression nests deeper than %d levels", maxDepth)
	}
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for p.isOp("+-") {
		op := p.next()
		w, err := p.term()
		if err != nil {
			return 0, err
		}
		if op.text == "+" {
			v += w
		} else {
			v -= w
		}
	}
	return v, nil
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for p.isOp("*/%") {
		op := p.next()
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		switch op.text {
		case "*":
			v *= w
		case "/":
			if w == 0 {
				return 0, fmt.Errorf("division by zero at position %d", op.pos)
			}
			v /= w
		case "%":
			if w == 0 {
				return 0, fmt.Errorf("modulo by zero at position %d", op.pos)
			}
			v = math.Mod(v, w)
		}
	}
	return v, nil
}

func (p *parser) unary() (float64, error) {
	if p.isOp("+-") {
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return 0, fmt.Errorf("the expression nests deeper than %d levels", maxDepth)
		}
		op := p.next()
		v, err := p.unary()
		if op.text == "-" {
			v = -v
		}
		return v, err
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	base, err := p.primary()
	if err != nil {
		return 0, err
	}
	if !p.isOp("^") {
		return base, nil
	}
	op := p.next()
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return 0, fmt.Errorf("the expression nests deeper than %d levels", maxDepth)
	}
	exp, err := p.unary()
	if err != nil {
		return 0, err
	}
	if base == 0 && exp < 0 {
		return 0, fmt.Errorf("division by zero: 0 to a negative power at position %d", op.pos)
	}
	v := math.Pow(base, exp)
	if math.IsNaN(v) {
		return 0, fmt.Errorf("%s^%s is not a real number (position %d)", format(base), format(exp), op.pos)
	}
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s^%s is too large to represent (position %d)", format(base), format(exp), op.pos)
	}
	return v, nil
}

func (p *parser) primary() (float64, error) {
	t := p.next()
	switch {
	case t.kind == tokNum:
		return t.num, nil
	case t.kind == tokOp && t.text == "(":
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if !p.isOp(")") {
			if p.peek().kind == tokEnd {
				return 0, fmt.Errorf("missing ')' to close '(' at position %d", t.pos)
			}
			return 0, p.unexpected(p.peek())
		}
		p.next()
		return v, nil
	case t.kind == tokIdent:
		if p.isOp("(") {
			return p.call(t)
		}
		switch t.text {
		case "pi":
			return math.Pi, nil
		case "e":
			return math.E, nil
		}
		if _, ok := functions[t.text]; ok {
			return 0, fmt.Errorf("function %s at position %d needs its arguments in parentheses, e.g. %s(2)", t.text, t.pos, t.text)
		}
		return 0, fmt.Errorf("unknown name %q at position %d; the constants are pi and e", t.text, t.pos)
	}
	return 0, p.unexpected(t)
}

// call evaluates a function call whose name is t and whose '(' is next.
func (p *parser) call(t token) (float64, error) {
	f, ok := functions[t.text]
	if !ok {
		return 0, fmt.Errorf("unknown function %q at position %d; known functions: %s", t.text, t.pos, functionNames)
	}
	open := p.next()
	var args []float64
	if p.isOp(")") {
		p.next()
	} else {
		for {
			v, err := p.expr()
			if err != nil {
				return 0, err
			}
			args = append(args, v)
			if p.isOp(",") {
				p.next()
				continue
			}
			if p.isOp(")") {
				p.next()
				break
			}
			if p.peek().kind == tokEnd {
				return 0, fmt.Errorf("missing ')' to close '(' at position %d", open.pos)
			}
			return 0, p.unexpected(p.peek())
		}
	}
	if len(args) < f.minArgs || (f.maxArgs >= 0 && len(args) > f.maxArgs) {
		return 0, fmt.Errorf("%s at position %d takes %s, got %d", t.text, t.pos, f.arity(), len(args))
	}
	v, err := f.eval(args)
	if err != nil {
		return 0, fmt.Errorf("%s at position %d: %v", t.text, t.pos, err)
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("%s(%s) is not a real number", t.text, formatArgs(args))
	}
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s(%s) is infinite", t.text, formatArgs(args))
	}
	return v, nil
}

func formatArgs(args []float64) string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = format(a)
	}
	return strings.Join(s, ", ")
}

// function is a built-in function; maxArgs < 0 means any number.
type function struct {
	minArgs, maxArgs int
	eval             func(args []float64) (float64, error)
}

func (f function) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs && f.minArgs == 1:
		return "1 argument"
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("%d arguments", f.minArgs)
	}
	return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
}

// unaryFunc adapts a one-argument math function.
func unaryFunc(g func(float64) float64) function {
	return function{minArgs: 1, maxArgs: 1, eval: func(args []float64) (float64, error) {
		return g(args[0]), nil
	}}
}

// trigFunc is unaryFunc for sin, cos and tan, whose results below 1e-15 are
// rounding noise from an approximate pi: sin(pi) is 0, not 1.2e-16.
func trigFunc(g func(float64) float64) function {
	return function{minArgs: 1, maxArgs: 1, eval: func(args []float64) (float64, error) {
		v := g(args[0])
		if math.Abs(v) < 1e-15 {
			v = 0
		}
		return v, nil
	}}
}

func positiveLog(g func(float64) float64) function {
	return function{minArgs: 1, maxArgs: 1, eval: func(args []float64) (float64, error) {
		if args[0] <= 0 {
			return 0, fmt.Errorf("the logarithm of %s is undefined; it needs a positive number", format(args[0]))
		}
		return g(args[0]), nil
	}}
}

func sqrt(args []float64) (float64, error) {
	if args[0] < 0 {
		return 0, fmt.Errorf("the square root of %s is not a real number", format(args[0]))
	}
	return math.Sqrt(args[0]), nil
}

func round(args []float64) (float64, error) {
	if len(args) == 1 {
		return math.Round(args[0]), nil
	}
	n := args[1]
	if n != math.Trunc(n) || n < -15 || n > 15 {
		return 0, fmt.Errorf("the number of decimals must be a whole number from -15 to 15, got %s", format(n))
	}
	scale := math.Pow(10, n)
	return math.Round(args[0]*scale) / scale, nil
}

func minimum(args []float64) (float64, error) {
	m := args[0]
	for _, a := range args[1:] {
		if a < m {
			m = a
		}
	}
	return m, nil
}

func maximum(args []float64) (float64, error) {
	m := args[0]
	for _, a := range args[1:] {
		if a > m {
			m = a
		}
	}
	return m, nil
}

var functions = map[string]function{
	"sqrt":  {minArgs: 1, maxArgs: 1, eval: sqrt},
	"cbrt":  unaryFunc(math.Cbrt),
	"abs":   unaryFunc(math.Abs),
	"exp":   unaryFunc(math.Exp),
	"ln":    positiveLog(math.Log),
	"log":   positiveLog(math.Log),
	"log10": positiveLog(math.Log10),
	"log2":  positiveLog(math.Log2),
	"sin":   trigFunc(math.Sin),
	"cos":   trigFunc(math.Cos),
	"tan":   trigFunc(math.Tan),
	"asin":  unaryFunc(math.Asin),
	"acos":  unaryFunc(math.Acos),
	"atan":  unaryFunc(math.Atan),
	"floor": unaryFunc(math.Floor),
	"ceil":  unaryFunc(math.Ceil),
	"round": {minArgs: 1, maxArgs: 2, eval: round},
	"min":   {minArgs: 1, maxArgs: -1, eval: minimum},
	"max":   {minArgs: 1, maxArgs: -1, eval: maximum},
}

const functionNames = "abs, acos, asin, atan, cbrt, ceil, cos, exp, floor, ln, log, log10, log2, max, min, round, sin, sqrt, tan"
