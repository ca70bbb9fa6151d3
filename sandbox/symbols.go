package sandbox

import (
	"maps"
	"path"
	"reflect"

	"adaptbot/contract"
	"adaptbot/toolkit"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

// toolkitKey is the Yaegi symbol key of the host package: import path, a
// slash, package name.
const toolkitKey = contract.ToolkitPath + "/toolkit"

// baseSymbols is the whole world an interpreted tool can see, built once: the
// Yaegi wrappers of the standard packages that contract.Allowed accepts, with
// text/template narrowed to a file-less Template, and the toolkit's calls:
// HTTP sent by the host under the egress policy, and calls of other tools
// through the host. Nothing else is ever given to an interpreter: os, syscall, unsafe,
// reflect, net and Yaegi's own unrestricted symbols are simply absent, so no
// import, init function or trick of the interpreter can reach them.
var baseSymbols = buildSymbols()

// sourcePackages are the allowed packages that are not in the symbol table:
// generic, so Yaegi compiles them from source into every interpreter
// (third_party/yaegi/stdlib/generic, a subset of the standard ones).
var sourcePackages = []string{"maps", "slices"}

func buildSymbols() interp.Exports {
	out := interp.Exports{}
	for key, syms := range stdlib.Symbols {
		if !contract.Allowed(path.Dir(key)) {
			continue
		}
		out[key] = syms
	}
	out[templateKey] = templateSymbols()
	out[toolkitKey] = map[string]reflect.Value{
		// HTTP, sent by the host (toolkit.Sender): the tool's process
		// never sends anything itself, nor holds a secret.
		"Do":          reflect.ValueOf(toolkit.Do),
		"PostJSON":    reflect.ValueOf(toolkit.PostJSON),
		"Request":     reflect.ValueOf((*toolkit.Request)(nil)),
		"Response":    reflect.ValueOf((*toolkit.Response)(nil)),
		"Get":         reflect.ValueOf(toolkit.Get),
		"GetJSON":     reflect.ValueOf(toolkit.GetJSON),
		"QueryEscape": reflect.ValueOf(toolkit.QueryEscape),
		// Calls of other tools, run by the host (toolkit.Caller).
		"Call":     reflect.ValueOf(toolkit.Call),
		"CallJSON": reflect.ValueOf(toolkit.CallJSON),
		// A value, not a variable: a tool may compare with it, not reassign it.
		"ErrBlocked": reflect.ValueOf(toolkit.ErrBlocked),
	}
	// Yaegi's table of interface wrappers: lookups only, no capability.
	out["."] = stdlib.Symbols["."]
	return out
}

// symbolsFor returns the symbol table for one interpreter. Package variables
// (io.EOF, time.Local, ...) are copied, so that a tool assigning to one
// changes its own interpreter's copy, never the host's or another tool's.
func symbolsFor() interp.Exports {
	out := make(interp.Exports, len(baseSymbols))
	for key, syms := range baseSymbols {
		out[key] = syms
		if !hasVars(syms) {
			continue
		}
		own := maps.Clone(syms)
		for name, v := range own {
			if v.CanSet() {
				c := reflect.New(v.Type()).Elem()
				c.Set(v)
				own[name] = c
			}
		}
		out[key] = own
	}
	return out
}

func hasVars(syms map[string]reflect.Value) bool {
	for _, v := range syms {
		if v.CanSet() {
			return true
		}
	}
	return false
}
