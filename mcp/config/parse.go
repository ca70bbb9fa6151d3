package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// configParser parses one configuration file, collecting every problem
// rather than stopping at the first.
type configParser struct {
	cfg      *Config
	getenv   func(string) string // expands ${VAR}
	problems []string
	// where[i] is how messages name cfg.Servers[i].
	where []string
}

func (p *configParser) problem(where, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if where != "" {
		msg = where + ": " + msg
	}
	p.problems = append(p.problems, msg)
}

func (p *configParser) warn(where, format string, args ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, p.cfg.Path+": "+where+": "+fmt.Sprintf(format, args...))
}

func (p *configParser) objectForm(data []byte) {
	top, err := orderedObject(data)
	if err != nil {
		p.problem("", "%v", err)
		return
	}
	key := ""
	for _, kv := range top {
		switch kv.key {
		case "mcpServers", "servers":
			if key != "" {
				p.problem(kv.key, "the file has both %q and %q; keep one", key, kv.key)
				continue
			}
			key = kv.key
		default:
			p.warn(kv.key, "unknown key, ignored (servers go under \"mcpServers\")")
		}
	}
	if key == "" {
		p.problem("", "no \"mcpServers\" object: want {\"mcpServers\": {\"NAME\": {\"command\": ...} or {\"url\": ...}}}")
		return
	}
	var raw json.RawMessage
	for _, kv := range top {
		if kv.key == key {
			raw = kv.value
		}
	}
	servers, err := orderedObject(raw)
	if err != nil {
		p.problem(key, "want an object of servers by name, got %s", jsonKind(raw))
		return
	}
	seen := map[string]bool{}
	for _, kv := range servers {
		where := key + "." + kv.key
		if seen[kv.key] {
			p.problem(where, "is defined twice; the second would silently win")
			continue
		}
		seen[kv.key] = true
		if kv.key == "" {
			// Found by FuzzParse: its tools would have been named "/TOOL".
			p.problem(where, "a server needs a name: use letters, digits, '-', '_' and '.'")
			continue
		}
		fields, err := orderedObject(kv.value)
		if err != nil {
			p.problem(where, "want an object with \"command\" or \"url\", got %s", jsonKind(kv.value))
			continue
		}
		s := Server{Name: kv.key}
		p.serverFields(where, "", fields, &s, true)
		p.add(where, s)
	}
}

func (p *configParser) arrayForm(data []byte) {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		p.problem("", "%v", err)
		return
	}
	for i, item := range items {
		where := fmt.Sprintf("[%d]", i)
		fields, err := orderedObject(item)
		if err != nil {
			p.problem(where, "want an object with \"name\" and \"transport\", got %s", jsonKind(item))
			continue
		}
		var s Server
		var transport []field
		transportSeen, transportOK := false, false
		for _, f := range fields {
			switch f.key {
			case "name":
				p.str(where, f, &s.Name)
			case "description":
				p.str(where, f, &s.Description)
			case "disabled":
				p.boolean(where, f, &s.Disabled)
			case "timeout":
				p.duration(where, f, &s.Timeout)
			case "transport":
				transportSeen = true
				if transport, err = orderedObject(f.value); err != nil {
					p.problem(where+".transport", "want an object with \"type\", got %s", jsonKind(f.value))
				} else {
					transportOK = true
				}
			default:
				p.warn(where+"."+f.key, "unknown key, ignored")
			}
		}
		if s.Name != "" {
			where = fmt.Sprintf("[%d] (%s)", i, s.Name)
		} else {
			p.problem(where, "needs \"name\"")
		}
		if !transportSeen {
			p.problem(where, "needs \"transport\": {\"type\": \"stdio\", \"command\": ...} or {\"type\": \"http\", \"url\": ...}")
		}
		if !transportOK {
			continue
		}
		hasType := false
		for _, f := range transport {
			if f.key == "type" {
				hasType = true
			}
		}
		if !hasType {
			p.problem(where+".transport", "needs \"type\": \"stdio\", \"http\" or \"sse\"")
			continue
		}
		p.serverFields(where, ".transport", transport, &s, false)
		p.add(where, s)
	}
}

// serverFields reads one server's transport fields into s. prefix is
// inserted before field names in messages (".transport" in the array form);
// topLevel says the server's other keys (description, timeout, disabled)
// may appear here too.
func (p *configParser) serverFields(where, prefix string, fields []field, s *Server, topLevel bool) {
	at := where + prefix
	var typ string
	present := map[string]bool{}
	commandOK := true
	urlKey := "url" // as the file spells it, for messages
	for _, f := range fields {
		present[f.key] = true
		switch f.key {
		case "type", "transportType":
			p.str(at, f, &typ)
		case "command":
			commandOK = p.str(at, f, &s.Command)
		case "args":
			p.strings(at, f, &s.Args)
		case "env":
			p.stringMap(at, f, &s.Env)
		case "cwd":
			p.str(at, f, &s.Dir)
		case "url", "serverUrl":
			p.str(at, f, &s.URL)
			urlKey = f.key
		case "headers":
			p.stringMap(at, f, &s.Headers)
		default:
			if topLevel {
				switch f.key {
				case "description":
					p.str(at, f, &s.Description)
					continue
				case "timeout":
					p.duration(at, f, &s.Timeout)
					continue
				case "disabled":
					p.boolean(at, f, &s.Disabled)
					continue
				}
			}
			p.warn(at+"."+f.key, "unknown key, ignored")
		}
	}
	hasCommand, hasURL := present["command"], present["url"] || present["serverUrl"]
	switch strings.ToLower(typ) {
	case "":
		switch {
		case hasCommand && hasURL:
			p.problem(at, "has both \"command\" and \"url\": a server is either a command (stdio) or a URL (http)")
			return
		case hasCommand:
			s.Transport = TransportStdio
		case hasURL:
			s.Transport = TransportHTTP
		default:
			p.problem(at, "needs \"command\" (a stdio server) or \"url\" (an HTTP server)")
			return
		}
	case "stdio":
		s.Transport = TransportStdio
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		s.Transport = TransportHTTP
	case "sse":
		s.Transport = TransportSSE
	default:
		p.problem(at+".type", "unknown transport type %q: use \"stdio\", \"http\" or \"sse\"", typ)
		return
	}
	unexpanded := p.expandFields(at, urlKey, s)
	switch s.Transport {
	case TransportStdio:
		if hasURL {
			p.problem(at, "is a stdio server but has \"url\"; drop it, or make the type \"http\"")
		}
		if !hasCommand {
			p.problem(at, "is a stdio server but has no \"command\"")
		} else if commandOK && !unexpanded[".command"] && strings.TrimSpace(s.Command) == "" {
			p.problem(at+".command", "is empty")
		}
		if present["headers"] {
			p.warn(at+".headers", "only applies to HTTP servers, ignored")
		}
	default:
		if hasCommand {
			p.problem(at, "is an %s server but has \"command\"; drop it, or make the type \"stdio\"", s.Transport)
		}
		if !hasURL {
			p.problem(at, "is an %s server but has no \"url\"", s.Transport)
		} else if unexpanded["."+urlKey] {
			// already reported
		} else if err := checkURL(s.URL); err != nil {
			p.problem(at+"."+urlKey, "%v", err)
		}
		for _, k := range []string{"args", "env", "cwd"} {
			if present[k] {
				p.warn(at+"."+k, "only applies to stdio servers, ignored")
			}
		}
	}
}

// expandFields expands the ${VAR} references of the fields that apply to
// s's transport (fields that do not apply are ignored, so they need no
// variables), and returns the fields it could not expand, which are left as
// written and need no further checks. Describe keeps showing the fields as
// written, so that a secret passed in the arguments or the URL is not
// printed.
func (p *configParser) expandFields(at, urlKey string, s *Server) map[string]bool {
	written := s.Describe()
	failed := map[string]bool{}
	one := func(field string, v *string) {
		out, missing, err := expandVars(*v, p.getenv)
		switch {
		case err != nil:
			p.problem(at+field, "%v", err)
		case len(missing) > 0 && s.Disabled:
			p.warn(at+field, "%s; ignored while the server is disabled", notSet(missing))
		case len(missing) > 0:
			p.problem(at+field, "%s", notSet(missing))
		default:
			*v = out
			return
		}
		failed[field] = true
	}
	values := func(field string, m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := m[k]
			one(field+"."+k, &v)
			m[k] = v
		}
	}
	if s.Transport == TransportStdio {
		one(".command", &s.Command)
		for i := range s.Args {
			one(fmt.Sprintf(".args[%d]", i), &s.Args[i])
		}
		values(".env", s.Env)
	} else {
		one("."+urlKey, &s.URL)
		values(".headers", s.Headers)
	}
	if s.Describe() != written {
		s.written = written
	}
	return failed
}

// notSet says which variables a field needs and how to fix it.
func notSet(names []string) string {
	if len(names) == 1 {
		return fmt.Sprintf("environment variable %s is not set (or is empty): set it, or give a default with ${%s:-default}", names[0], names[0])
	}
	return fmt.Sprintf("environment variables %s are not set (or are empty): set them, or give defaults with ${NAME:-default}", strings.Join(names, ", "))
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expandVars replaces ${NAME} and ${NAME:-default} in s with values from
// getenv, an empty value counting as unset. It returns the names of the
// variables that are unset and have no default, each once, and an error for
// a reference it cannot read. "$$" and a "$" not followed by "{" are kept
// as they are.
func expandVars(s string, getenv func(string) string) (string, []string, error) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	var b strings.Builder
	var missing []string
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteString("$$")
			i += 2
			continue
		case !strings.HasPrefix(s[i:], "${"):
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", nil, fmt.Errorf("%q: unterminated ${ (want ${NAME} or ${NAME:-default}; write $${ to keep it as it is)", s)
		}
		ref := s[i : i+end+1]
		name, def, hasDef := strings.Cut(ref[2:len(ref)-1], ":-")
		if !varName.MatchString(name) {
			return "", nil, fmt.Errorf("%q: bad reference %s: want ${NAME} or ${NAME:-default}, NAME being letters, digits and '_'", s, ref)
		}
		if strings.Contains(def, "${") {
			return "", nil, fmt.Errorf("%q: a default cannot hold another reference (in %s)", s, ref)
		}
		switch v := getenv(name); {
		case v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case !slices.Contains(missing, name):
			missing = append(missing, name)
		}
		i += end + 1
	}
	return b.String(), missing, nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: want an http:// or https:// URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// add records s, checking its name.
func (p *configParser) add(where string, s Server) {
	if s.Name != "" {
		switch {
		case s.Name == Local:
			p.problem(where, "the name %q is reserved for AdaptBot's own tools; pick another", Local)
		case !serverName.MatchString(s.Name):
			p.problem(where, "bad server name %q: use letters, digits, '-', '_' and '.', starting with a letter or digit, at most 64 (tools are named NAME/TOOL, so no '/')", s.Name)
		}
	}
	p.cfg.Servers = append(p.cfg.Servers, s)
	p.where = append(p.where, where)
}

// checkNames reports names used twice (the object form cannot have them;
// the array form can).
func (p *configParser) checkNames() {
	first := map[string]string{}
	for i, s := range p.cfg.Servers {
		if s.Name == "" {
			continue
		}
		if w, ok := first[s.Name]; ok {
			p.problem(p.where[i], "the name %q is already used by %s", s.Name, w)
			continue
		}
		first[s.Name] = p.where[i]
	}
}

func (p *configParser) str(at string, f field, dst *string) bool {
	if err := json.Unmarshal(f.value, dst); err != nil {
		p.problem(at+"."+f.key, "want a string, got %s", jsonKind(f.value))
		return false
	}
	return true
}

func (p *configParser) boolean(at string, f field, dst *bool) {
	if err := json.Unmarshal(f.value, dst); err != nil {
		p.problem(at+"."+f.key, "want true or false, got %s", jsonKind(f.value))
	}
}

func (p *configParser) strings(at string, f field, dst *[]string) {
	var items []json.RawMessage
	if err := json.Unmarshal(f.value, &items); err != nil {
		p.problem(at+"."+f.key, "want an array of strings, got %s", jsonKind(f.value))
		return
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			p.problem(fmt.Sprintf("%s.%s[%d]", at, f.key, i), "want a string, got %s", jsonKind(it))
			continue
		}
		out = append(out, s)
	}
	*dst = out
}

func (p *configParser) stringMap(at string, f field, dst *map[string]string) {
	kvs, err := orderedObject(f.value)
	if err != nil {
		p.problem(at+"."+f.key, "want an object of strings, got %s", jsonKind(f.value))
		return
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		var s string
		if err := json.Unmarshal(kv.value, &s); err != nil {
			p.problem(at+"."+f.key+"."+kv.key, "want a string, got %s", jsonKind(kv.value))
			continue
		}
		out[kv.key] = s
	}
	*dst = out
}

func (p *configParser) duration(at string, f field, dst *time.Duration) {
	var s string
	var n float64
	switch {
	case json.Unmarshal(f.value, &s) == nil:
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			p.problem(at+"."+f.key, "%q: want a positive duration such as \"10s\"", s)
			return
		}
		*dst = d
	case json.Unmarshal(f.value, &n) == nil:
		if n <= 0 {
			p.problem(at+"."+f.key, "%v: want a positive number of seconds", n)
			return
		}
		*dst = time.Duration(n * float64(time.Second))
	default:
		p.problem(at+"."+f.key, "want a duration such as \"10s\" or a number of seconds, got %s", jsonKind(f.value))
	}
}

// field is one key of a JSON object, in file order.
type field struct {
	key   string
	value json.RawMessage
}

// orderedObject returns the members of a JSON object in file order
// (duplicates included, so the caller can report them).
func orderedObject(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("want an object, got %s", jsonKind(data))
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{key, v})
	}
	return out, nil
}

// jsonKind names the kind of a JSON value for messages.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// syntaxError says where a file stops being JSON, as line:column.
func syntaxError(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == nil {
			return "invalid JSON: unexpected end of file"
		}
		return "invalid JSON: " + err.Error()
	}
	// Offset counts the bytes read, the bad one included; at the end of the
	// file, point just past it.
	end := int(se.Offset) - 1
	if int(se.Offset) >= len(data) {
		end = len(data)
	}
	line, col := 1, 1
	for _, b := range data[:max(end, 0)] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return "line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + ": invalid JSON: " + se.Error()
}
