package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Transports a server can be reached by.
const (
	TransportStdio = "stdio" // a command AdaptBot starts, spoken to over its stdin and stdout
	TransportHTTP  = "http"  // streamable HTTP
	TransportSSE   = "sse"   // the older HTTP+SSE transport, for servers that still use it
)

// Local is the server name of AdaptBot's own tools in search results and
// listings; no configured server may take it.
const Local = "local"

// DefaultTimeout is how long one server may take to connect and list its
// tools before it counts as failed.
const DefaultTimeout = 30 * time.Second

// Server is one external MCP server.
type Server struct {
	// Name identifies the server: it is the domain of its tools in the
	// router and the first half of their "server/tool" names.
	Name string
	// Description says what the server is for; optional.
	Description string
	// Transport is TransportStdio, TransportHTTP or TransportSSE.
	Transport string

	// Command, Args, Env and Dir (the working folder, "cwd" in the file)
	// start a stdio server. Env is added to a minimal environment (PATH,
	// HOME and the like): AdaptBot's own environment, which may hold API
	// keys, is not passed on.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL and Headers reach an HTTP server.
	URL     string
	Headers map[string]string

	// Timeout overrides the hub's per-server limit; zero means the hub's.
	Timeout time.Duration
	// Disabled servers are parsed and checked but never connected.
	Disabled bool

	// written is Describe as the file has it, when expanding ${VAR}
	// references changed it.
	written string
}

// Config is a parsed configuration file.
type Config struct {
	// Path is the file it came from, as given.
	Path string
	// Servers are the servers in file order, disabled ones included.
	Servers []Server
	// Warnings are things that are probably mistakes but harm nothing,
	// such as unknown keys; each says where, like an error does.
	Warnings []string
}

// Enabled returns the servers that are not disabled.
func (c *Config) Enabled() []Server {
	var out []Server
	for _, s := range c.Servers {
		if !s.Disabled {
			out = append(out, s)
		}
	}
	return out
}

// Error lists every problem of a configuration file, each with the
// file and the place in it ("mcp_servers.json: mcpServers.weather: needs
// \"command\" or \"url\"").
type Error struct {
	Path     string
	Problems []string
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = e.Path + ": " + p
	}
	return strings.Join(lines, "\n")
}

// Load reads and parses the configuration file at path, expanding
// ${VAR} references from the process's environment. A missing file is an
// error that wraps fs.ErrNotExist, so callers that treat "no file" as "no
// servers" can tell.
func Load(path string) (*Config, error) {
	return LoadEnv(path, nil)
}

// LoadEnv is Load with the environment ${VAR} references are
// expanded from: getenv, or os.Getenv if nil.
func LoadEnv(path string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file: %w", path, os.ErrNotExist)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ParseEnv(path, data, getenv)
}

// LoadOptional is LoadEnv for the file AdaptBot reads by default: a
// missing file is no servers, unless required (the user named it). A file
// with problems says to check it with `adaptbot mcp validate`.
func LoadOptional(path string, required bool, getenv func(string) string) (*Config, error) {
	mc, err := LoadEnv(path, getenv)
	if errors.Is(err, os.ErrNotExist) && !required {
		return &Config{Path: path}, nil
	}
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("invalid MCP configuration (run `adaptbot mcp validate -c %s`):\n%w", path, err)
		}
		return nil, err
	}
	return mc, nil
}

// Parse parses a configuration in either of its forms:
//
//	{"mcpServers": {"NAME": {"command": ..., "args": [...], "env": {...}}
//	                       | {"url": ..., "headers": {...}}}}
//	[{"name": "NAME", "transport": {"type": "stdio"|"http"|"sse", ...}}]
//
// The object form also takes "servers" for "mcpServers" (as VS Code writes
// it) and, per server, an optional "type", "cwd", "description", "timeout"
// ("10s", or a number of seconds) and "disabled".
//
// References to environment variables, ${NAME} or ${NAME:-default} (as in
// Claude Code's .mcp.json), are expanded from the process's environment in
// "command", each of "args", the values of "env", "url", and the values of
// "headers", so that a file can be shared without the secrets it needs. A
// variable that is empty counts as unset: ${NAME:-default} then gives the
// default, and ${NAME} is a problem that names the server, the field and the
// variable, never a silent empty string (for a disabled server, a warning).
// The default is taken as written, up to the first "}". "$$", and a "$" not
// followed by "{", are kept as they are; "$$" never starts a reference, so
// "$${NAME}" stays "$${NAME}".
//
// All problems are reported together in a *Error; path only names the
// file in messages.
func Parse(path string, data []byte) (*Config, error) {
	return ParseEnv(path, data, nil)
}

// ParseEnv is Parse with the environment ${VAR} references are
// expanded from: getenv, or os.Getenv if nil.
func ParseEnv(path string, data []byte, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	p := &configParser{cfg: &Config{Path: path}, getenv: getenv}
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		p.problem("", "the file is empty; want {\"mcpServers\": {...}} or an array of servers")
	case !json.Valid(trimmed):
		p.problem("", "%s", syntaxError(data))
	case trimmed[0] == '{':
		p.objectForm(trimmed)
	case trimmed[0] == '[':
		p.arrayForm(trimmed)
	default:
		p.problem("", "want {\"mcpServers\": {...}} or an array of servers, got %s", jsonKind(trimmed))
	}
	p.checkNames()
	if len(p.problems) > 0 {
		return p.cfg, &Error{Path: path, Problems: p.problems}
	}
	return p.cfg, nil
}

// Describe says in one line how a server is reached, for listings. For a
// parsed configuration it shows the command, arguments and URL as written in
// the file, ${VAR} references unexpanded.
func (s Server) Describe() string {
	if s.written != "" {
		return s.written
	}
	switch s.Transport {
	case TransportStdio:
		parts := append([]string{s.Command}, s.Args...)
		for i, a := range parts {
			if a == "" || strings.ContainsAny(a, " \t\"'") {
				parts[i] = strconv.Quote(a)
			}
		}
		d := "stdio: " + strings.Join(parts, " ")
		if len(s.Env) > 0 {
			keys := make([]string, 0, len(s.Env))
			for k := range s.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			d += " (env " + strings.Join(keys, ", ") + ")"
		}
		return d
	default:
		return s.Transport + ": " + s.URL
	}
}
