package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"

	"adaptbot/mcp/client"
	"adaptbot/router"
)

// Mode says how a search query matches a tool's text.
type Mode string

// The search modes.
const (
	// ModeAuto picks ModeRegex when the query has a regex metacharacter
	// (one of ^$|*+?()[]{}\), else ModeKeywords when it has a comma, else
	// ModeSubstring.
	ModeAuto Mode = "auto"
	// ModeSubstring matches the query as a plain substring.
	ModeSubstring Mode = "substring"
	// ModeRegex matches the query as a Go (RE2) regular expression,
	// unanchored; it is compiled once per search.
	ModeRegex Mode = "regex"
	// ModeKeywords splits the query on commas and matches a tool when every
	// keyword is a substring of one of its searched fields (all of them, not
	// any; each keyword may match a different field).
	ModeKeywords Mode = "keywords"
	// ModeWord matches the query as a whole word or phrase: the characters
	// around it must not be letters or digits, so "_", "-", "." and spaces
	// separate words and "forecast" finds get_forecast but not forecasting.
	ModeWord Mode = "word"
)

// Field is a part of a tool that a search looks at.
type Field string

// The searchable fields.
const (
	FieldName        Field = "name"
	FieldTitle       Field = "title"
	FieldDescription Field = "description"
	FieldSchema      Field = "schema" // the input schema's property names, titles and descriptions
)

// DefaultFields are searched when SearchOptions.Fields is empty.
var DefaultFields = []Field{FieldName, FieldTitle, FieldDescription}

// Sort orders search results.
type Sort string

// The orders.
const (
	SortScore  Sort = "score"  // relevance from the router, best first (the default)
	SortServer Sort = "server" // by server (AdaptBot's own first), then tool
	SortTool   Sort = "tool"   // by tool name, then server
)

// SearchOptions configures a search. The zero value searches names, titles
// and descriptions, case-insensitively, in auto mode, by relevance, with no
// limit.
type SearchOptions struct {
	Mode          Mode
	Fields        []Field
	CaseSensitive bool
	Sort          Sort
	// Limit caps the results; 0 means no limit.
	Limit int
	// Strict makes a search fail when any server fails, instead of
	// returning partial results.
	Strict bool
}

// Result is one tool that matched, with its relevance score (comparable
// only within one search) and the fields that matched.
type Result struct {
	Tool
	Score   float64 `json:"score"`
	Matched []Field `json:"matched,omitempty"`
}

// MarshalJSON writes the tool as listings do (Tool.MarshalJSON), then its
// score and what matched.
func (r Result) MarshalJSON() ([]byte, error) {
	tool, err := r.Tool.MarshalJSON()
	if err != nil {
		return nil, err
	}
	rest, err := json.Marshal(struct {
		Score   float64 `json:"score"`
		Matched []Field `json:"matched,omitempty"`
	}{r.Score, r.Matched})
	if err != nil {
		return nil, err
	}
	// Both are objects: the tool's keys, then the rest's.
	return append(append(tool[:len(tool)-1:len(tool)-1], ','), rest[1:]...), nil
}

// ParseMode reads a mode as written on the command line.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeSubstring, ModeRegex, ModeKeywords, ModeWord:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: use auto, substring, regex, keywords or word", s)
}

// ParseFields reads a comma-separated list of fields.
func ParseFields(s string) ([]Field, error) {
	var out []Field
	for _, part := range strings.Split(s, ",") {
		switch f := Field(strings.ToLower(strings.TrimSpace(part))); f {
		case "":
		case FieldName, FieldTitle, FieldDescription, FieldSchema:
			if !containsField(out, f) {
				out = append(out, f)
			}
		default:
			return nil, fmt.Errorf("unknown field %q: use name, title, description or schema", part)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no fields: use name, title, description or schema, comma-separated")
	}
	return out, nil
}

// ParseSort reads a sort order.
func ParseSort(s string) (Sort, error) {
	switch o := Sort(strings.ToLower(strings.TrimSpace(s))); o {
	case "":
		return SortScore, nil
	case SortScore, SortServer, SortTool:
		return o, nil
	}
	return "", fmt.Errorf("unknown sort %q: use score, server or tool", s)
}

func containsField(fs []Field, f Field) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

const regexMeta = `^$|*+?()[]{}\`

// DetectMode returns the mode ModeAuto picks for query.
func DetectMode(query string) Mode {
	switch {
	case strings.ContainsAny(query, regexMeta):
		return ModeRegex
	case strings.Contains(query, ","):
		return ModeKeywords
	}
	return ModeSubstring
}

// Query is a compiled search query: its regular expression, if any, is
// compiled once, here.
type Query struct {
	Text string
	Mode Mode // never ModeAuto

	fields        []Field
	caseSensitive bool
	needle        string         // substring (folded unless case-sensitive)
	keywords      []string       // keywords (folded unless case-sensitive)
	re            *regexp.Regexp // regex and word modes
}

// Compile checks and compiles query for opts. A bad regular expression is
// an error that quotes it and says what is wrong.
func Compile(query string, opts SearchOptions) (*Query, error) {
	mode := opts.Mode
	if mode == "" || mode == ModeAuto {
		mode = DetectMode(query)
	}
	fields := opts.Fields
	if len(fields) == 0 {
		fields = DefaultFields
	}
	q := &Query{Text: query, Mode: mode, fields: fields, caseSensitive: opts.CaseSensitive}
	fold := func(s string) string {
		if opts.CaseSensitive {
			return s
		}
		return strings.ToLower(s)
	}
	flags := "(?i)"
	if opts.CaseSensitive {
		flags = ""
	}
	switch mode {
	case ModeSubstring:
		q.needle = fold(query)
	case ModeKeywords:
		for _, k := range strings.Split(query, ",") {
			if k = strings.TrimSpace(k); k != "" {
				q.keywords = append(q.keywords, fold(k))
			}
		}
	case ModeRegex:
		re, err := regexp.Compile(flags + query)
		if err != nil {
			if _, plain := regexp.Compile(query); plain != nil {
				err = plain // quotes the query as written, without the flags
			}
			var se *syntax.Error
			if errors.As(err, &se) {
				return nil, fmt.Errorf("bad regular expression %q: %s: `%s`", query, se.Code, se.Expr)
			}
			return nil, fmt.Errorf("bad regular expression %q: %v", query, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		q.re = re
	case ModeWord:
		if strings.TrimSpace(query) != "" {
			q.re = regexp.MustCompile(flags + `(?:^|[^\p{L}\p{N}])` + regexp.QuoteMeta(strings.TrimSpace(query)) + `(?:$|[^\p{L}\p{N}])`)
		}
	default:
		return nil, fmt.Errorf("unknown mode %q: use auto, substring, regex, keywords or word", mode)
	}
	return q, nil
}

// empty reports whether the query matches everything.
func (q *Query) empty() bool {
	switch q.Mode {
	case ModeKeywords:
		return len(q.keywords) == 0
	case ModeRegex:
		return q.Text == ""
	case ModeWord:
		return q.re == nil
	}
	return q.needle == ""
}

// Match reports whether t matches and which of the searched fields did.
func (q *Query) Match(t Tool) (bool, []Field) {
	if q.empty() {
		return true, nil
	}
	var matched []Field
	found := make([]bool, len(q.keywords))
	for _, f := range q.fields {
		text := fieldText(t, f)
		if text == "" {
			continue
		}
		hit := false
		switch q.Mode {
		case ModeSubstring:
			hit = strings.Contains(q.fold(text), q.needle)
		case ModeKeywords:
			folded := q.fold(text)
			for i, k := range q.keywords {
				if strings.Contains(folded, k) {
					found[i], hit = true, true
				}
			}
		default:
			hit = q.re.MatchString(text)
		}
		if hit {
			matched = append(matched, f)
		}
	}
	if q.Mode == ModeKeywords {
		for _, ok := range found {
			if !ok {
				return false, nil
			}
		}
	}
	return len(matched) > 0, matched
}

func (q *Query) fold(s string) string {
	if q.caseSensitive {
		return s
	}
	return strings.ToLower(s)
}

// routeText is the query as the router reads it: words, without regex
// syntax or commas.
func (q *Query) routeText() string {
	if q.Mode == ModeRegex || q.Mode == ModeKeywords {
		return strings.Map(func(r rune) rune {
			if strings.ContainsRune(regexMeta+",.", r) {
				return ' '
			}
			return r
		}, q.Text)
	}
	return q.Text
}

func fieldText(t Tool, f Field) string {
	switch f {
	case FieldName:
		return t.Name
	case FieldTitle:
		return t.Title
	case FieldDescription:
		return t.Description
	case FieldSchema:
		return schemaText(t.Parameters)
	}
	return ""
}

// schemaText gathers a schema's property names, titles and descriptions,
// at any depth, one per line.
func schemaText(schema json.RawMessage) string {
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return ""
	}
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				names := make([]string, 0, len(props))
				for name := range props {
					names = append(names, name)
				}
				sort.Strings(names)
				for _, name := range names {
					b.WriteString(name + "\n")
					walk(props[name])
				}
			}
			for _, k := range []string{"title", "description"} {
				if s, ok := v[k].(string); ok {
					b.WriteString(s + "\n")
				}
			}
			for _, k := range []string{"items", "additionalProperties"} {
				walk(v[k])
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return b.String()
}

// Search returns the tools that match query, scored by the router over all
// of tools, sorted and cut as opts say.
func Search(tools []Tool, query string, opts SearchOptions) ([]Result, error) {
	q, err := Compile(query, opts)
	if err != nil {
		return nil, err
	}
	return q.Search(tools, opts), nil
}

// Search runs the compiled query over tools.
func (q *Query) Search(tools []Tool, opts SearchOptions) []Result {
	var results []Result
	for _, t := range tools {
		if ok, fields := q.Match(t); ok {
			results = append(results, Result{Tool: t, Matched: fields})
		}
	}
	if len(results) == 0 {
		return []Result{}
	}
	score(results, tools, q.routeText())
	sortResults(results, opts.Sort)
	if opts.Limit > 0 && len(results) > opts.Limit {
		results = results[:opts.Limit]
	}
	return results
}

// score sets each result's relevance from a router index over all tools,
// so that scores mean the same as they do when the agent routes.
func score(results []Result, tools []Tool, query string) {
	if strings.TrimSpace(query) == "" {
		return
	}
	ix := router.New()
	for _, t := range tools {
		ix.Upsert(searchDoc(t))
	}
	type key struct{ server, name string }
	scores := map[key]float64{}
	for _, h := range ix.Route(query, len(tools)) {
		scores[key{h.Server, h.Name}] = h.Score
	}
	for i := range results {
		d := searchDoc(results[i].Tool)
		results[i].Score = scores[key{d.Server, d.Name}]
	}
}

// searchDoc is t's router document; local tools are keyed apart from the
// external servers (whose names cannot hold ':') and keep their category
// as their domain's words.
func searchDoc(t Tool) router.Doc {
	d := t.doc()
	if t.Server == Local {
		d.Server = Local + ":" + t.Category
	}
	return d
}

func sortResults(rs []Result, by Sort) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		switch by {
		case SortServer:
			return lessByServer(a.Tool, b.Tool)
		case SortTool:
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			return lessByServer(a.Tool, b.Tool)
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return lessByServer(a.Tool, b.Tool)
	})
}

// Catalog is every tool that listings and search look through: AdaptBot's
// own and those of the external servers.
type Catalog struct {
	// Local are AdaptBot's own tools (see LocalTools).
	Local []Tool
	// Hub reaches the external servers; nil means none.
	Hub *client.Hub
}

// List returns the tools of server (Local for AdaptBot's own, "" for all),
// sorted by server then name, with one error per server that failed.
func (c Catalog) List(ctx context.Context, server string) ([]Tool, []*client.ServerError) {
	var tools []Tool
	if server == "" || server == Local {
		tools = append(tools, c.Local...)
	}
	var errs []*client.ServerError
	if server != Local && c.Hub != nil {
		var only []string
		if server != "" {
			only = []string{server}
		}
		ext, e := c.Hub.List(ctx, only...)
		tools = append(tools, external(ext)...)
		errs = e
	} else if server != "" && server != Local {
		errs = []*client.ServerError{{Server: server, Err: errors.New("not in the configuration (no MCP servers are configured)")}}
	}
	sortTools(tools)
	return tools, errs
}

// Search compiles query (so a bad regex fails before any server is
// contacted), lists every server and searches all the tools. With
// opts.Strict any server's failure fails the search; otherwise the results
// are partial and the failures are returned beside them.
func (c Catalog) Search(ctx context.Context, query string, opts SearchOptions) ([]Result, []*client.ServerError, error) {
	q, err := Compile(query, opts)
	if err != nil {
		return nil, nil, err
	}
	tools, errs := c.List(ctx, "")
	if opts.Strict && len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, errs, fmt.Errorf("%d of %d servers did not answer, and the search is strict:\n  %s", len(errs), len(c.Hub.Servers()), strings.Join(msgs, "\n  "))
	}
	return q.Search(tools, opts), errs, nil
}
