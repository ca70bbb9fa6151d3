// Package toolbox is the one shape of a tool: a Spec and Call. A local tool
// runs in the sandbox; a remote one runs on an external MCP server. The
// agent, the HTTP run endpoint, the MCP server, the MCP hub, the router feed
// and the command line all see tools through this package, so argument
// validation and the "server/tool" name encoding each live here, once.
//
// It must not import app, agent, generator or mcp: they import it.
package toolbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"adaptbot"
	"adaptbot/registry"
)

// Spec describes a tool: everything a model, a page or a listing needs to
// know about it without calling it. It is the root's one description of a
// tool, adaptbot.Tool.
type Spec = adaptbot.Tool

// Tool is a tool that can be called. Call validates args against the
// tool's schema before anything runs; a failure to validate is an
// *ArgsError.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// ErrNotFound is the one error for a tool that does not exist or does not
// serve. It is the registry's (the lower layer), so one errors.Is check
// covers every kind of tool.
var ErrNotFound = registry.ErrNotFound

// NotFound returns the error for a missing tool, in the one wording every
// door uses: `no tool named "x"`.
func NotFound(name string) error { return registry.NotFound(name) }

// ArgsError says a call's arguments are not valid JSON or break the tool's
// schema. It carries the schema so the caller (a model, a person) can fix
// the arguments.
type ArgsError struct {
	Tool   string
	Reason string
	Schema json.RawMessage
}

// Error names the tool and says what is wrong, in the words the MCP doors
// have always used: "tool x: invalid arguments: ...".
// Failure is FailInvalidArgs: the caller's arguments are at fault.
func (e *ArgsError) Failure() adaptbot.Failure { return adaptbot.FailInvalidArgs }

func (e *ArgsError) Error() string {
	return fmt.Sprintf("tool %s: invalid arguments: %s", e.Tool, e.Reason)
}

// MaxFunctionName is the longest function name providers accept (OpenAI:
// ^[A-Za-z0-9_-]{1,64}$).
const MaxFunctionName = 64

// FunctionName encodes a tool's name for a model's function list, whose
// names must match ^[A-Za-z0-9_-]{1,64}$: "server/tool" becomes
// "server__tool", every other character outside that set becomes '_', and
// a name longer than 64 characters keeps its start and ends in a short hash
// of the whole name, so the same tool always gets the same function name.
//
// The encoding cannot be reversed ("a/b" and "a__b" encode alike): whoever
// offers functions keeps a map from the names it offered to the tools.
func FunctionName(name string) string {
	var b strings.Builder
	b.Grow(len(name) + 1)
	for _, r := range name {
		switch {
		case r == '/':
			b.WriteString("__")
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	fn := b.String()
	if fn != "" && len(fn) <= MaxFunctionName {
		return fn
	}
	suffix := "_" + adaptbot.Digest([]byte(name))[:8] // the first 4 bytes of its SHA-256
	if fn == "" {
		return "tool" + suffix
	}
	return fn[:MaxFunctionName-len(suffix)] + suffix
}

// SplitName splits "server/tool" into its halves; ok is false for a local
// tool's bare name. Server names hold no '/', so the first one splits.
func SplitName(name string) (server, tool string, ok bool) { return strings.Cut(name, "/") }

// OfServers returns a function that reports whether name, as a tool names
// a callee ("server__tool" or "server/tool"), belongs to one of the MCP
// servers servers lists, connected or not: registry.Options.Known, so that
// a tool may call an external server's tool even before the server answers.
// servers may return nil (no hub).
func OfServers(servers func() []string) func(name string) bool {
	return func(name string) bool {
		for _, s := range servers() {
			if rest, ok := strings.CutPrefix(name, s); ok && len(rest) > 2 && (rest[0] == '/' || strings.HasPrefix(rest, "__")) {
				return true
			}
		}
		return false
	}
}

// Title is a tool's name in words, as MCP clients show it:
// "unit_converter" is "Unit converter", "server/tool" is "Server/tool".
func Title(name string) string {
	words := strings.Fields(strings.ReplaceAll(name, "_", " "))
	if len(words) == 0 {
		return name
	}
	words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
	return strings.Join(words, " ")
}

// OpenWorld reports whether the local tool t reaches the network, itself
// (Spec.Network) or through a tool it calls, at any depth; local holds the
// local tools by name. A tool it calls that is not in local reaches
// nothing: a call of it fails.
func OpenWorld(t Spec, local map[string]Spec) bool {
	return reaches(t, local, map[string]bool{})
}

func reaches(t Spec, local map[string]Spec, seen map[string]bool) bool {
	if t.Network {
		return true
	}
	seen[t.Name] = true
	for _, name := range t.Calls {
		if callee, ok := local[name]; ok && !seen[name] && reaches(callee, local, seen) {
			return true
		}
	}
	return false
}
