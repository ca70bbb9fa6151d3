package benchmarks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Tri is a success flag that may not apply to a request. Its zero value is
// NA, so a Row that does not set it records N/A.
type Tri int8

// The three values of a Tri, written to the file as N/A, True and False.
const (
	NA Tri = iota
	True
	False
)

// TriOf returns True if ok, else False.
func TriOf(ok bool) Tri {
	if ok {
		return True
	}
	return False
}

// String returns the form written to the file: "N/A", "True" or "False".
func (t Tri) String() string {
	switch t {
	case True:
		return "True"
	case False:
		return "False"
	case NA:
		return "N/A"
	}
	return fmt.Sprintf("Tri(%d)", int8(t))
}

// ParseTri reads a Tri as written by String. It is lenient with files written
// by other tools: case does not matter, true/false/yes/no/1/0 are accepted,
// and an empty value, "NA", "None" or "null" mean NA.
func ParseTri(s string) (Tri, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "1":
		return True, nil
	case "false", "no", "0":
		return False, nil
	case "", "n/a", "na", "none", "null":
		return NA, nil
	}
	return NA, fmt.Errorf("not True, False or N/A: %q", s)
}

// NodeTime is the time one graph node took within a request.
type NodeTime struct {
	Node     string
	Duration time.Duration
}

// Row is one request. Times are durations here and seconds in the file.
//
// Column by column, in file order (see Header):
//
//	timestamp                     Timestamp, RFC 3339 in UTC with milliseconds;
//	                              Log fills in the current time when zero
//	query                         Query, the user's text, quoted by CSV as needed
//	intent                        Intent: CHAT, BUILD, RUN or FEEDBACK
//	category                      Category: general, need_tool, a tool name,
//	                              or a build_ category (build_create, ...)
//	tool_generation_time_sec      GenerationTime in seconds; left EMPTY when zero,
//	                              i.e. for every request that is not a build, so
//	                              spreadsheet and pandas averages skip it
//	parameter_extraction_success  ParamExtraction: True, False or N/A
//	tool_execution_success        ToolExecution: True, False or N/A
//	end_to_end_latency_sec        Latency in seconds, six decimals
//	error_message                 Error, empty on success
//	request_id                    RequestID
//	llm_calls                     LLMCalls
//	prompt_tokens                 PromptTokens
//	completion_tokens             CompletionTokens
//	build_attempts                BuildAttempts
//	discovery_requests            DiscoveryRequests
//	tools_loaded                  ToolsLoaded, how many tools were available
//	node_times                    NodeTimes as name=seconds pairs in the order the
//	                              nodes ran, separated by semicolons, three
//	                              decimals, e.g. classifier=0.012;execute=0.300;
//	                              a node that ran twice appears twice
//	tools                         Tools, the tools that ran, in the order they
//	                              ran, separated by semicolons, e.g.
//	                              weather;unit_converter; empty when none ran.
//	                              Category stays the first of them
//	door                          Door, where the request came in: http, chat
//	                              page and API alike; mcp; cli; openai (/v1,
//	                              the OpenAI-compatible API); internal (the
//	                              server on its own, such as an automatic
//	                              repair). Empty in rows written before it
//	user                          User, the caller's pseudonym (a keyed hash,
//	                              never a name, key or e-mail address); empty
//	                              for the single local user
//	error_kind                    ErrorKind, the kind of failure, empty on
//	                              success: invalid, forbidden, not_found,
//	                              conflict, failed, unavailable, limited,
//	                              not_configured, timeout, upstream,
//	                              cancelled, internal
//	rated_request                 RatedRequest, for a FEEDBACK row: the request
//	                              ID of the answer rated; empty otherwise
//	score                         Score, for a FEEDBACK row: 1 (thumbs up) or
//	                              -1 (thumbs down); empty otherwise
//	tier                          Tier, the sandbox tier that ran the request's
//	                              tool calls: interpreted, native, or mixed
//	                              when some calls ran on each; empty when no
//	                              local tool ran (none did, or only an MCP
//	                              server's) and in rows written before it
//
// A FEEDBACK row's category and tools are those of the answer it rates, so
// that satisfaction is counted per path and per tool; its query is the
// person's comment, if any.
//
// Text fields (query, intent, category, error_message, request_id and the
// tool names) are cleaned as they are written, so every common CSV reader
// opens the file and a terminal that prints it is not driven by it: see
// Clean. A query or error message longer than MaxText characters is cut,
// with a marker saying how long it was.
type Row struct {
	Timestamp         time.Time
	Query             string
	Intent            string
	Category          string
	GenerationTime    time.Duration
	ParamExtraction   Tri
	ToolExecution     Tri
	Latency           time.Duration
	Error             string
	RequestID         string
	LLMCalls          int
	PromptTokens      int
	CompletionTokens  int
	BuildAttempts     int
	DiscoveryRequests int
	ToolsLoaded       int
	NodeTimes         []NodeTime
	Tools             []string
	Door              string
	User              string
	ErrorKind         string
	RatedRequest      string
	Score             int
	Tier              string
}

// Tiers, the values of Row.Tier: which tier of the sandbox ran a request's
// tool calls (issue 31).
const (
	TierInterpreted = "interpreted" // every call ran interpreted
	TierNative      = "native"      // every call ran on the native tier
	TierMixed       = "mixed"       // some calls ran on each
)

// TierOf returns the Row.Tier of a request whose tool calls ran on tiers
// (each named once): "" for none, the one tier, or TierMixed.
func TierOf(tiers []string) string {
	switch len(tiers) {
	case 0:
		return ""
	case 1:
		return tiers[0]
	}
	return TierMixed
}

// Column names, in file order.
const (
	colTimestamp         = "timestamp"
	colQuery             = "query"
	colIntent            = "intent"
	colCategory          = "category"
	colGenerationTime    = "tool_generation_time_sec"
	colParamExtraction   = "parameter_extraction_success"
	colToolExecution     = "tool_execution_success"
	colLatency           = "end_to_end_latency_sec"
	colError             = "error_message"
	colRequestID         = "request_id"
	colLLMCalls          = "llm_calls"
	colPromptTokens      = "prompt_tokens"
	colCompletionTokens  = "completion_tokens"
	colBuildAttempts     = "build_attempts"
	colDiscoveryRequests = "discovery_requests"
	colToolsLoaded       = "tools_loaded"
	colNodeTimes         = "node_times"
	colTools             = "tools"
	colDoor              = "door"
	colUser              = "user"
	colErrorKind         = "error_kind"
	colRatedRequest      = "rated_request"
	colScore             = "score"
	colTier              = "tier"
)

var header = []string{
	colTimestamp, colQuery, colIntent, colCategory, colGenerationTime,
	colParamExtraction, colToolExecution, colLatency, colError,
	colRequestID, colLLMCalls, colPromptTokens, colCompletionTokens,
	colBuildAttempts, colDiscoveryRequests, colToolsLoaded, colNodeTimes,
	colTools, colDoor, colUser, colErrorKind, colRatedRequest, colScore,
	colTier,
}

// Header returns the column names of the file, in order. The first nine are
// the columns of the original format.
func Header() []string {
	return append([]string(nil), header...)
}

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// cleaned returns r with its text as the file holds it (see Clean and Cut).
func (r Row) cleaned() Row {
	r.Query = Cut(Clean(r.Query), MaxText)
	r.Intent = Clean(r.Intent)
	r.Category = Clean(r.Category)
	r.Error = Cut(Clean(r.Error), MaxText)
	r.RequestID = Clean(r.RequestID)
	r.Door, r.User, r.ErrorKind, r.RatedRequest = Clean(r.Door), Clean(r.User), Clean(r.ErrorKind), Clean(r.RatedRequest)
	r.Tier = Clean(r.Tier)
	// Tool and node names are cleaned here, not only when written, so
	// that the live aggregates see what a reload of the file will see.
	if len(r.Tools) > 0 {
		tools := make([]string, 0, len(r.Tools))
		for _, t := range r.Tools {
			if t = strings.TrimSpace(toolNameCleaner.Replace(Clean(t))); t != "" {
				tools = append(tools, t)
			}
		}
		r.Tools = tools
	}
	if len(r.NodeTimes) > 0 {
		nts := make([]NodeTime, len(r.NodeTimes))
		for i, nt := range r.NodeTimes {
			nts[i] = NodeTime{Node: nodeNameCleaner.Replace(Clean(nt.Node)), Duration: nt.Duration}
		}
		r.NodeTimes = nts
	}
	return r
}

// record renders r, cleaned, as CSV fields in Header order.
func (r Row) record() []string {
	gen := ""
	if r.GenerationTime != 0 {
		gen = seconds(r.GenerationTime, 6)
	}
	score := ""
	if r.Score != 0 {
		score = strconv.Itoa(r.Score)
	}
	return []string{
		r.Timestamp.UTC().Format(timeLayout),
		r.Query,
		r.Intent,
		r.Category,
		gen,
		r.ParamExtraction.String(),
		r.ToolExecution.String(),
		seconds(r.Latency, 6),
		r.Error,
		r.RequestID,
		strconv.Itoa(r.LLMCalls),
		strconv.Itoa(r.PromptTokens),
		strconv.Itoa(r.CompletionTokens),
		strconv.Itoa(r.BuildAttempts),
		strconv.Itoa(r.DiscoveryRequests),
		strconv.Itoa(r.ToolsLoaded),
		formatNodeTimes(r.NodeTimes),
		formatTools(r.Tools),
		r.Door,
		r.User,
		r.ErrorKind,
		r.RatedRequest,
		score,
		r.Tier,
	}
}

// toolNameCleaner keeps tool names from breaking the a;b;c format.
var toolNameCleaner = strings.NewReplacer(";", "_")

func formatTools(tools []string) string {
	var b strings.Builder
	for i, t := range tools {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(t)
	}
	return b.String()
}

func parseTools(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var tools []string
	for t := range strings.SplitSeq(s, ";") {
		if t = strings.TrimSpace(t); t != "" {
			tools = append(tools, t)
		}
	}
	return tools
}

func seconds(d time.Duration, decimals int) string {
	return strconv.FormatFloat(d.Seconds(), 'f', decimals, 64)
}

// nodeNameCleaner keeps node names from breaking the name=seconds;... format.
var nodeNameCleaner = strings.NewReplacer("=", "_", ";", "_")

func formatNodeTimes(nts []NodeTime) string {
	var b strings.Builder
	for i, nt := range nts {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(nt.Node) // cleaned by Row.cleaned
		b.WriteByte('=')
		b.WriteString(seconds(nt.Duration, 3))
	}
	return b.String()
}

func parseNodeTimes(s string) ([]NodeTime, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var nts []NodeTime
	for part := range strings.SplitSeq(s, ";") {
		name, secs, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%q is not name=seconds", part)
		}
		d, err := parseSeconds(secs)
		if err != nil {
			return nil, err
		}
		nts = append(nts, NodeTime{Node: name, Duration: d})
	}
	return nts, nil
}

// parseSeconds reads a decimal number of seconds. Empty and the placeholders
// other tools write for a missing number mean zero.
func parseSeconds(s string) (time.Duration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "n/a", "na", "nan", "none", "null":
		return 0, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number of seconds", s)
	}
	return time.Duration(math.Round(f * float64(time.Second))), nil
}

// parseScore reads a feedback score: 1, -1, or empty for none.
func parseScore(s string) (int, error) {
	switch strings.TrimSpace(s) {
	case "":
		return 0, nil
	case "1", "+1":
		return 1, nil
	case "-1":
		return -1, nil
	}
	return 0, fmt.Errorf("%q is not a score (1 or -1)", s)
}

func parseCount(s string) (int, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return n, nil
}

// timeLayouts are tried in order; the first is what Log writes, the others
// are what Python's datetime writes.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

func parseTimestamp(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 timestamp", s)
}

// setField decodes one column's value into r. Unknown columns are ignored.
func (r *Row) setField(col, v string) error {
	var err error
	switch col {
	case colTimestamp:
		r.Timestamp, err = parseTimestamp(v)
	case colQuery:
		r.Query = v
	case colIntent:
		r.Intent = v
	case colCategory:
		r.Category = v
	case colGenerationTime:
		r.GenerationTime, err = parseSeconds(v)
	case colParamExtraction:
		r.ParamExtraction, err = ParseTri(v)
	case colToolExecution:
		r.ToolExecution, err = ParseTri(v)
	case colLatency:
		r.Latency, err = parseSeconds(v)
	case colError:
		r.Error = v
	case colRequestID:
		r.RequestID = v
	case colLLMCalls:
		r.LLMCalls, err = parseCount(v)
	case colPromptTokens:
		r.PromptTokens, err = parseCount(v)
	case colCompletionTokens:
		r.CompletionTokens, err = parseCount(v)
	case colBuildAttempts:
		r.BuildAttempts, err = parseCount(v)
	case colDiscoveryRequests:
		r.DiscoveryRequests, err = parseCount(v)
	case colToolsLoaded:
		r.ToolsLoaded, err = parseCount(v)
	case colNodeTimes:
		r.NodeTimes, err = parseNodeTimes(v)
	case colTools:
		r.Tools = parseTools(v)
	case colDoor:
		r.Door = v
	case colUser:
		r.User = v
	case colErrorKind:
		r.ErrorKind = v
	case colRatedRequest:
		r.RatedRequest = v
	case colScore:
		r.Score, err = parseScore(v)
	case colTier:
		r.Tier = v
	}
	if err != nil {
		return fmt.Errorf("column %s: %w", col, err)
	}
	return nil
}
