package generator

import (
	"encoding/json"
	"strings"
)

// extractSource returns the Go file inside whatever a model sent: a bare
// file, a file in a ```go fence with prose around it, a reply escaped once
// too often (literal \n instead of line breaks), or prose followed by code.
// It never judges the code; the gate does that. It returns "" when there is
// no code at all: neither a package clause nor a function.
func extractSource(text string) string {
	s := strings.TrimSpace(text)
	if looksEscaped(s) {
		s = unescape(s)
	}
	if block, ok := fencedGo(s); ok {
		s = block
		if looksEscaped(s) {
			s = unescape(s)
		}
	} else {
		s = trimProse(s)
	}
	s = strings.TrimSpace(s)
	if !hasPackageClause(s) && !strings.Contains(s, "func ") {
		return "" // prose: "I cannot write that tool."
	}
	return s + "\n"
}

// looksEscaped reports whether s is code whose line breaks arrived as the
// two characters \ and n: more of those than real line breaks. A real file
// with more "\n" in string literals than lines does not happen.
func looksEscaped(s string) bool {
	return strings.Count(s, `\n`) > strings.Count(s, "\n")
}

// unescape undoes one level of string escaping, as JSON (most models) or,
// failing that, for the common escapes only.
func unescape(s string) string {
	quoted := s
	if !strings.HasPrefix(s, `"`) || !strings.HasSuffix(s, `"`) || len(s) < 2 {
		quoted = `"` + s + `"`
	}
	var out string
	if err := json.Unmarshal([]byte(quoted), &out); err == nil {
		return out
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, `"`), `"`)
	return strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t", `\r`, "", `\"`, `"`).Replace(s)
}

// fencedGo returns the Go file among the fenced blocks of s: the first that
// declares Execute, else the first with a package clause, else the first
// fence marked go. An unclosed last fence (a reply cut short) runs to the end.
func fencedGo(s string) (string, bool) {
	parts := strings.Split(s, "```")
	if len(parts) < 2 {
		return "", false
	}
	type block struct{ info, body string }
	var blocks []block
	for i := 1; i < len(parts); i += 2 {
		info, body, _ := strings.Cut(parts[i], "\n")
		info = strings.TrimSpace(info)
		// "```package x" (no info string, no line break) is rare but seen.
		if strings.HasPrefix(info, "package ") {
			info, body = "", parts[i]
		}
		blocks = append(blocks, block{info: strings.ToLower(info), body: body})
	}
	for _, b := range blocks {
		if hasPackageClause(b.body) && strings.Contains(b.body, "func Execute") {
			return b.body, true
		}
	}
	for _, b := range blocks {
		if hasPackageClause(b.body) {
			return b.body, true
		}
	}
	for _, b := range blocks {
		if b.info == "go" || b.info == "golang" {
			return b.body, true
		}
	}
	return "", false
}

func hasPackageClause(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "package ") {
			return true
		}
	}
	return false
}

// trimProse cuts unfenced prose from around a Go file: everything before the
// package clause (but not the doc comment right above it), and trailing
// lines that read as sentences rather than code.
func trimProse(s string) string {
	lines := strings.Split(s, "\n")
	start := -1
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "package ") {
			start = i
			break
		}
	}
	if start < 0 {
		return s
	}
	for start > 0 && isComment(lines[start-1]) {
		start--
	}
	end := len(lines)
	for end > start+1 && isProse(lines[end-1]) {
		end--
	}
	return strings.Join(lines[start:end], "\n")
}

func isComment(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "*")
}

// goLineStarts are how a line of a gofmt'ed file can begin at column 0.
var goLineStarts = []string{"}", ")", "//", "/*", "*/", "package ", "import ", "func ", "type ", "const ", "var "}

// isProse reports whether a line after the code is a sentence or blank
// rather than code: code lines are indented or start like a declaration.
func isProse(line string) bool {
	if strings.TrimSpace(line) == "" {
		return true
	}
	if line[0] == ' ' || line[0] == '\t' {
		return false
	}
	for _, p := range goLineStarts {
		if strings.HasPrefix(line, p) {
			return false
		}
	}
	return true
}
