package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"adaptbot/clip"
)

// What the schema validator found wrong, in the words of the person or
// model that sent the arguments: where (the parameter, by its name), what
// it must be, and what it was. The validator's own text ("validating
// root: validating /properties/n: type: ...") names schema paths and Go
// values; it never reaches a caller, except a part of it for a rule these
// words do not cover.

// explainInvalid words the validator's err for the instance the schema s
// (decoded JSON) describes. what is "arguments" or "the result".
func explainInvalid(err error, s any, what string) string {
	msg := err.Error()
	schemaPath := ""
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		at, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		schemaPath, msg = at, tail
	}
	sub := lookup(s, schemaPath)
	where := instancePath(schemaPath)
	subject := what
	if base, ok := strings.CutSuffix(where, "[]"); ok && base != "" {
		subject = "each item of " + strconv.Quote(base)
	} else if where != "" {
		subject = strconv.Quote(where)
	}
	if m := typeRule.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s must be %s, not %s", subject, typeWords(strings.Split(m[3], ", ")), valueWords(m[2], m[1]))
	}
	if m := requiredRule.FindStringSubmatch(msg); m != nil {
		names := quotedList(m[1])
		is, they := "is", "it is"
		if len(names) > 1 {
			is, they = "are", "they are"
		}
		if where == "" {
			return fmt.Sprintf("%s %s missing: %s required", join(names, "and"), is, they)
		}
		return fmt.Sprintf("%s needs %s, which %s missing", subject, join(names, "and"), is)
	}
	if m := additionalRule.FindStringSubmatch(msg); m != nil {
		names := quotedList(m[1])
		known := quoteAll(propertyNames(sub))
		noun, whose := "parameter", "the parameters are"
		if what != arguments || where != "" {
			noun, whose = "field", "its fields are"
		}
		out := fmt.Sprintf("%s is not a %s", names[0], noun)
		if len(names) > 1 {
			out = fmt.Sprintf("%s are not %ss", join(names, "and"), noun)
		}
		if where != "" {
			out += " of " + subject
		}
		if len(known) == 0 {
			return out + " (there are none)"
		}
		return out + "; " + whose + " " + join(known, "and")
	}
	if rule, detail, ok := strings.Cut(msg, ": "); ok {
		if words := ruleWords(rule, subject, sub); words != "" {
			// A bound on a number: the number sent, as the validator shows it.
			if m := boundRule.FindStringSubmatch(detail); m != nil && strings.HasSuffix(rule, "imum") {
				if r, ok := new(big.Rat).SetString(m[1]); ok {
					f, _ := r.Float64()
					words += ", not " + strconv.FormatFloat(f, 'g', -1, 64)
				}
			}
			return words
		}
	}
	if where != "" {
		return subject + ": " + msg
	}
	return msg
}

var (
	typeRule       = regexp.MustCompile(`^type: (.*) has type "(\w+)", want (?:one of )?"([\w, ]+)"$`)
	requiredRule   = regexp.MustCompile(`^required: missing properties: \[(.*)\]$`)
	additionalRule = regexp.MustCompile(`^unexpected additional properties \[(.*)\]$`)
	boundRule      = regexp.MustCompile(`^(-?\d+(?:/\d+)?) is `) // a big.Rat, as the validator prints one
)

// ruleWords words the rules of a schema that bound a value; "" for one
// they do not cover.
func ruleWords(rule, subject string, sub map[string]any) string {
	num := func(key string) string {
		if v, ok := sub[key]; ok {
			return jsonText(v)
		}
		return "?"
	}
	switch rule {
	case "enum":
		var vals []string
		if list, ok := sub["enum"].([]any); ok {
			for _, v := range list {
				vals = append(vals, jsonText(v))
			}
		}
		return fmt.Sprintf("%s must be one of %s", subject, join(vals, "or"))
	case "const":
		return fmt.Sprintf("%s must be %s", subject, num("const"))
	case "minimum":
		return fmt.Sprintf("%s must be at least %s", subject, num("minimum"))
	case "maximum":
		return fmt.Sprintf("%s must be at most %s", subject, num("maximum"))
	case "exclusiveMinimum":
		return fmt.Sprintf("%s must be more than %s", subject, num("exclusiveMinimum"))
	case "exclusiveMaximum":
		return fmt.Sprintf("%s must be less than %s", subject, num("exclusiveMaximum"))
	case "multipleOf":
		return fmt.Sprintf("%s must be a multiple of %s", subject, num("multipleOf"))
	case "minLength":
		return fmt.Sprintf("%s must be at least %s characters long", subject, num("minLength"))
	case "maxLength":
		return fmt.Sprintf("%s must be at most %s characters long", subject, num("maxLength"))
	case "pattern":
		return fmt.Sprintf("%s must match the pattern %s", subject, num("pattern"))
	case "minItems":
		return fmt.Sprintf("%s must hold at least %s items", subject, num("minItems"))
	case "maxItems":
		return fmt.Sprintf("%s must hold at most %s items", subject, num("maxItems"))
	case "uniqueItems":
		return fmt.Sprintf("%s must not hold the same item twice", subject)
	case "minProperties":
		return fmt.Sprintf("%s must have at least %s fields", subject, num("minProperties"))
	case "maxProperties":
		return fmt.Sprintf("%s must have at most %s fields", subject, num("maxProperties"))
	case "anyOf", "oneOf":
		return fmt.Sprintf("%s fits none of the forms it may take", subject)
	case "not":
		return fmt.Sprintf("%s takes a form it may not", subject)
	}
	return ""
}

// lookup is the part of schema s at the JSON pointer p ("root" or
// "/properties/x/items"), or nil.
func lookup(s any, p string) map[string]any {
	cur := s
	if p != "root" && p != "" {
		for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
			seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
			switch v := cur.(type) {
			case map[string]any:
				cur = v[seg]
			case []any:
				i, err := strconv.Atoi(seg)
				if err != nil || i < 0 || i >= len(v) {
					return nil
				}
				cur = v[i]
			default:
				return nil
			}
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

// instancePath is where in the arguments the schema at JSON pointer p
// applies, as a person writes it ("point.x", "items[]"), "" for the whole.
func instancePath(p string) string {
	if p == "root" || p == "" || !strings.HasPrefix(p, "/") {
		return ""
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties", "patternProperties":
			if i+1 < len(segs) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[i+1]))
				i++
			}
		case "items", "additionalItems":
			b.WriteString("[]")
		case "prefixItems":
			if i+1 < len(segs) {
				b.WriteString("[" + segs[i+1] + "]")
				i++
			}
		case "$defs", "definitions":
			b.Reset() // a $ref's target: its own path
			i++
		}
	}
	return b.String()
}

// typeWords says what a JSON type is, for a person.
func typeWords(types []string) string {
	var out []string
	for _, t := range types {
		switch strings.TrimSpace(t) {
		case "string":
			out = append(out, "text (a JSON string)")
		case "integer":
			out = append(out, "a whole number")
		case "number":
			out = append(out, "a number")
		case "boolean":
			out = append(out, "true or false")
		case "object":
			out = append(out, "an object")
		case "array":
			out = append(out, "a list (a JSON array)")
		case "null":
			out = append(out, "null")
		default:
			out = append(out, t)
		}
	}
	return join(out, "or")
}

// valueWords says what a value of JSON type t was; shown is the
// validator's text of it, quoted for a scalar.
func valueWords(t, shown string) string {
	switch t {
	case "string":
		return "the text " + strconv.Quote(clip.String(shown, 60))
	case "integer", "number":
		return "the number " + clip.String(shown, 60)
	case "boolean":
		return shown
	case "null":
		return "null"
	case "object":
		return "an object"
	case "array":
		return "a list"
	}
	return t
}

// propertyNames are the properties schema s names, in order by name.
func propertyNames(s map[string]any) []string {
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// quotedList reads the validator's list of names (`"a" "b"` or `"a"`).
func quotedList(s string) []string {
	var out []string
	for _, f := range regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).FindAllString(s, -1) {
		if n, err := strconv.Unquote(f); err == nil {
			out = append(out, strconv.Quote(n))
		}
	}
	if len(out) == 0 && s != "" {
		out = append(out, s)
	}
	return out
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// join lists words as a sentence does: "a", "a and b", "a, b and c".
func join(words []string, and string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + and + " " + words[len(words)-1]
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// explainSyntax words why raw is not JSON: where it goes wrong, and what
// was sent, never the decoder's own words.
func explainSyntax(err error, raw []byte) string {
	shown := clip.String(strings.TrimSpace(string(raw)), 60)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok && se.Offset > 0 {
		return fmt.Sprintf("%s goes wrong at character %d", strconv.Quote(shown), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Sprintf("%s ends too soon (a { [ or \" left open?)", strconv.Quote(shown))
	}
	return strconv.Quote(shown) + " is not one JSON value"
}

// example is a JSON object that would pass schema s's required parameters
// (or, with none required, its first ones), for a message that says what
// to send: {"expression": "…"}.
func example(s map[string]any) string {
	props, _ := s["properties"].(map[string]any)
	var names []string
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if n, ok := r.(string); ok {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		names = propertyNames(s)
	}
	if len(names) > 3 {
		names = names[:3]
	}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		v := `"…"`
		switch p["type"] {
		case "integer", "number":
			v = "1"
		case "boolean":
			v = "true"
		case "array":
			v = "[…]"
		case "object":
			v = "{…}"
		}
		parts = append(parts, strconv.Quote(n)+": "+v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
