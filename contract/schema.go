package contract

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"reflect"
	"strconv"
	"strings"
)

// node is a JSON schema node whose properties keep the order of Input's fields,
// so the schema a person or a model reads follows the source.
type node struct {
	// Type is a JSON type's name, or for a value of Output that may be
	// null, a list of two: the type and "null".
	Type                 any      `json:"type,omitempty"`
	Description          string   `json:"description,omitempty"`
	Properties           props    `json:"properties,omitempty"`
	Required             []string `json:"required,omitempty"`
	Items                *node    `json:"items,omitempty"`
	AdditionalProperties any      `json:"additionalProperties,omitempty"`
}

type prop struct {
	name string
	node *node
}

type props []prop

func (p props) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, pr := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(pr.name)
		v, err := json.Marshal(pr.node)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var basic = map[string]string{
	"string": "string", "bool": "boolean",
	"int": "integer", "int8": "integer", "int16": "integer", "int32": "integer", "int64": "integer",
	"uint": "integer", "uint8": "integer", "uint16": "integer", "uint32": "integer", "uint64": "integer",
	"float32": "number", "float64": "number", "rune": "integer", "byte": "integer",
}

const maxDepth = 8

// shape says which of the tool's two structs a schema describes: Input,
// what a caller sends, or Output, what encoding/json makes of a result.
type shape struct {
	name string // "Input" or "Output"
	// output: a nil pointer, slice or map encodes as null, so their schemas
	// allow null; a field is present unless omitempty or omitzero may drop it.
	output bool
}

var (
	inputShape  = shape{name: "Input"}
	outputShape = shape{name: "Output", output: true}
)

// nullable lets n also be null, for what encodes as null when nil.
func (sh shape) nullable(n *node) *node {
	if sh.output {
		if t, ok := n.Type.(string); ok && t != "" {
			n.Type = []string{t, "null"}
		}
	}
	return n
}

// schema derives the JSON schema of a Go type expression declared in the tool.
func (c *checker) schema(sh shape, e ast.Expr, depth int) *node {
	if depth > maxDepth {
		c.problem(e.Pos(), "%s nests deeper than %d levels (or refers to itself)", sh.name, maxDepth)
		return &node{}
	}
	switch t := e.(type) {
	case *ast.Ident:
		if typ, ok := basic[t.Name]; ok {
			return &node{Type: typ}
		}
		if t.Name == "any" {
			return &node{}
		}
		if ts, ok := c.types[t.Name]; ok {
			return c.schema(sh, ts.Type, depth+1)
		}
		c.problem(t.Pos(), "%s uses type %s, which a JSON schema cannot describe; use basic types, slices, maps with string keys and structs declared in the tool", sh.name, t.Name)
	case *ast.StarExpr:
		return sh.nullable(c.schema(sh, t.X, depth+1))
	case *ast.ArrayType:
		if isIdent(t.Elt, "byte") {
			return sh.nullable(&node{Type: "string", Description: "base64-encoded bytes"})
		}
		n := &node{Type: "array", Items: c.schema(sh, t.Elt, depth+1)}
		if t.Len == nil { // a slice; an array is never nil
			sh.nullable(n)
		}
		return n
	case *ast.MapType:
		if !isIdent(t.Key, "string") {
			c.problem(t.Pos(), "%s maps must have string keys", sh.name)
		}
		return sh.nullable(&node{Type: "object", AdditionalProperties: c.schema(sh, t.Value, depth+1)})
	case *ast.InterfaceType:
		if t.Methods == nil || len(t.Methods.List) == 0 {
			return &node{}
		}
	case *ast.StructType:
		return c.object(sh, t, depth)
	}
	c.problem(e.Pos(), "%s uses a type a JSON schema cannot describe", sh.name)
	return &node{}
}

func (c *checker) object(sh shape, st *ast.StructType, depth int) *node {
	n := &node{Type: "object", AdditionalProperties: false}
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			c.problem(f.Pos(), "embedded fields are not supported in %s; name the field", sh.name)
			continue
		}
		var tag reflect.StructTag
		if f.Tag != nil {
			raw, _ := strconv.Unquote(f.Tag.Value)
			tag = reflect.StructTag(raw)
		}
		jsonName, omitempty, quoted, skip := jsonTag(tag.Get("json"))
		for _, id := range f.Names {
			if sh.output && !skip && !id.IsExported() {
				// encoding/json skips it, but the interpreter's structs
				// export every field, so a tool's result would carry it
				// (as "X<name>"), outside the schema.
				c.problem(id.Pos(), "%s's field %s is unexported, but the interpreter would still write it into the result: export it (with a json tag), tag it `json:\"-\"`, or keep it out of the result", sh.name, id.Name)
				continue
			}
			if skip || !id.IsExported() {
				continue
			}
			name := jsonName
			if name == "" {
				name = id.Name
			}
			child := c.schema(sh, f.Type, depth+1)
			if t, ok := child.Type.(string); ok && quoted && (t == "number" || t == "integer" || t == "boolean") {
				// The ",string" option carries a number or a bool in a string.
				child.Type = "string"
			}
			if d := describe(tag.Get("jsonschema")); d != "" {
				child.Description = d
			} else if f.Doc != nil {
				child.Description = strings.TrimSpace(f.Doc.Text())
			} else if f.Comment != nil {
				child.Description = strings.TrimSpace(f.Comment.Text())
			}
			n.Properties = append(n.Properties, prop{name: name, node: child})
			// Input: a pointer may be left out. Output: a field is always
			// written unless omitempty may drop it.
			_, pointer := f.Type.(*ast.StarExpr)
			if !omitempty && (!pointer || sh.output) {
				n.Required = append(n.Required, name)
			}
		}
	}
	if n.Properties == nil {
		n.Properties = props{}
	}
	return n
}

func jsonTag(tag string) (name string, omitempty, quoted, skip bool) {
	if tag == "-" {
		return "", false, false, true
	}
	parts := strings.Split(tag, ",")
	for _, opt := range parts[1:] {
		switch opt {
		case "omitempty", "omitzero":
			omitempty = true
		case "string":
			quoted = true
		}
	}
	return parts[0], omitempty, quoted, false
}

// describe reads a jsonschema tag: either the description itself, or
// comma-separated key=value pairs with a description= key.
func describe(tag string) string {
	if !strings.Contains(tag, "description=") {
		return strings.TrimSpace(tag)
	}
	for _, kv := range strings.Split(tag, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "description="); ok {
			return v
		}
	}
	return ""
}
