package contract

import (
	"fmt"
	"go/ast"
	"go/token"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What a tool that acts declares (issue 37): the hosts it reaches, as
// `const Hosts = "api.example.com, hooks.example.org"`, and what its source
// shows of the requests it sends — a method other than GET or HEAD
// (toolkit.PostJSON, or toolkit.Do with a Request whose Method is such a
// literal) and the secrets it names ({{secret:NAME}} in a string literal).
// Such a tool must declare its hosts. The host refuses the same at run
// time whatever the source shows; this check says it before anything runs.

// secretRef finds a secret's placeholder in a literal.
var secretRef = regexp.MustCompile(`\{\{secret:([^{}]*)\}\}`)

// secretName is what a secret's name may be.
var secretName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// ValidSecretName reports whether name can name a secret: a letter, then
// letters, digits and underscores, at most 64 in all.
func ValidSecretName(name string) error {
	if !secretName.MatchString(name) {
		return fmt.Errorf("invalid secret name %q: use a letter, then letters, digits and _ (at most 64), such as HOOK or GITHUB_TOKEN", name)
	}
	return nil
}

// hostName is a DNS name: labels of letters, digits and hyphens.
var hostName = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ParseHosts reads the value of a tool's Hosts constant: host names (or
// addresses), each with an optional :port, separated by commas. They come
// back in lower case, each once, in the order written.
func ParseHosts(list string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(list, ",") {
		h := strings.ToLower(strings.TrimSpace(item))
		if h == "" {
			continue
		}
		if err := checkHost(h); err != nil {
			return nil, err
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("Hosts names no host: write them as \"api.example.com, hooks.example.org\"")
	}
	return out, nil
}

func checkHost(h string) error {
	bad := func(why string) error {
		return fmt.Errorf("Hosts: %q is not a host: %s (write a host name such as api.example.com, optionally with :port)", h, why)
	}
	if strings.Contains(h, "://") || strings.ContainsAny(h, "/?#@ *") {
		return bad("no scheme, path, user or wildcard")
	}
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return bad("an unclosed [")
		}
		name, port = h[1:end], strings.TrimPrefix(h[end+1:], ":")
		if _, err := netip.ParseAddr(name); err != nil {
			return bad("not an IPv6 address in brackets")
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i+1:]
	}
	if port != "" || strings.HasSuffix(h, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad("the port is not a number from 1 to 65535")
		}
	}
	if strings.HasPrefix(h, "[") {
		return nil
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return nil
	}
	if len(name) > 253 || !hostName.MatchString(strings.TrimSuffix(name, ".")) {
		return bad("not a DNS name")
	}
	return nil
}

// acting reads what the source shows of the requests it sends: the
// secrets its string literals name, and where it sends with a method other
// than GET or HEAD (the first place). Malformed placeholders are problems.
func (c *checker) acting(f *ast.File, pkg string, spec *Spec) (changes token.Pos, how string) {
	secrets := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err != nil || !strings.Contains(s, "{{secret:") {
				return true
			}
			refs := secretRef.FindAllStringSubmatch(s, -1)
			if len(refs) != strings.Count(s, "{{secret:") {
				c.problem(n.Pos(), "a secret's placeholder is written {{secret:NAME}}, with nothing else between the braces")
			}
			for _, m := range refs {
				if err := ValidSecretName(m[1]); err != nil {
					c.problem(n.Pos(), "%v", err)
					continue
				}
				secrets[m[1]] = true
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || !isIdent(sel.X, pkg) {
				return true
			}
			switch sel.Sel.Name {
			case "PostJSON":
				if changes == token.NoPos {
					changes, how = n.Pos(), pkg+".PostJSON sends a POST"
				}
			case "Do":
				if len(n.Args) == 2 {
					if m := literalMethod(n.Args[1]); m != "" && m != "GET" && m != "HEAD" && changes == token.NoPos {
						changes, how = n.Pos(), fmt.Sprintf("%s.Do sends a %s", pkg, m)
					}
				}
			}
		case *ast.CompositeLit:
			// A Request written out anywhere (a variable passed to Do).
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && isIdent(sel.X, pkg) && sel.Sel.Name == "Request" {
				if m := literalMethod(n); m != "" && m != "GET" && m != "HEAD" && changes == token.NoPos {
					changes, how = n.Pos(), fmt.Sprintf("a %s.Request with Method %q", pkg, m)
				}
			}
		}
		return true
	})
	for name := range secrets {
		spec.Secrets = append(spec.Secrets, name)
	}
	slices.Sort(spec.Secrets)
	return changes, how
}

// literalMethod is the Method of a toolkit.Request literal e (or &literal),
// upper-cased, when it is a string literal; "" otherwise.
func literalMethod(e ast.Expr) string {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return ""
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok || !isIdent(kv.Key, "Method") {
			continue
		}
		if b, ok := kv.Value.(*ast.BasicLit); ok && b.Kind == token.STRING {
			s, _ := strconv.Unquote(b.Value)
			return strings.ToUpper(strings.TrimSpace(s))
		}
	}
	return ""
}
