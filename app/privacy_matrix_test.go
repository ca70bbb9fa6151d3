package main

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// The privacy matrix (issue 27's "Done when"): every door, every role and
// every store that holds a person's words. People leave words through each
// door (HTTP JSON, SSE, /v1, /mcp, stdio MCP, the CLI); then everyone
// reads through each door, and nobody but a word's
// author and the admins gets it back. Every call that writes leaves
// exactly one row, naming its caller. A GET route that docs/api.md does
// not say the words of (routes_test.go), or a file holding people's words
// that has no rule here, fails the test.

// wordsRule says what a GET route serves, for the matrix.
type wordsRule int

const (
	// noWords: serves no person's words (tools, pages, sign-in, health).
	noWords wordsRule = iota + 1
	// byAuthor: serves people's words, each to its author and admins alone.
	byAuthor
	// adminOnly: serves everyone's words, to admins alone.
	adminOnly
	// door: the route is a door of its own, swept by its own client
	// (/mcp streams, so a plain GET would wait).
	door
)

// wordsStores are the files that may hold a person's words, relative to
// the server's folder; each is private by author wherever it is served.
var wordsStores = []*regexp.Regexp{
	regexp.MustCompile(`^benchmarks/benchmarks\.csv$`),                // rows: admins (the dashboard, /api/benchmarks, report)
	regexp.MustCompile(`^benchmarks/requests\.jsonl(\.1)?$`),          // traces: service.Request(s), by author
	regexp.MustCompile(`^tools/\.failures/[a-z0-9_]+\.json$`),         // failure cases: service.caseFor
	regexp.MustCompile(`^tools/\.history/[a-z0-9_]+/v\d+/note\.txt$`), // version notes: service.noteFor
}

// TestPrivacyMatrix: see above.
func TestPrivacyMatrix(t *testing.T) {
	m := newMatrix(t)
	m.leaveWords()
	m.readEverywhere()
	m.authorsAndAdminsRead()
	m.oneRowPerCall()
	m.everyStoreHasARule()
}

// matrixPerson is someone of the matrix, with their key and pseudonym.
type matrixPerson struct{ name, key, pseudonym string }

// matrix is the server the matrix runs on, its people, and what they did.
type matrix struct {
	t                         *testing.T
	in                        *instance
	token, root, bob, ann, cy matrixPerson
	// words are what each person left, by pseudonym.
	words map[string][]string
	// calls count the calls that write a row: pseudonym → door → calls.
	calls map[string]map[string]int
	// rated is ann's chat that she rated.
	rated string
}

func newMatrix(t *testing.T) *matrix {
	// ann's failing chat, and her chat that works (which she then thumbs
	// down).
	script := newScript(
		map[string]string{"ann asks annzqx7": "calculator", "ann asks twice": "calculator"},
		map[string]string{"ann asks annzqx7": `{"expression":"annzqx7"}`, "ann asks twice": `{"expression":"9*914914"}`})
	env := modelEnv(llmtest.New(t, script.reply))
	env["ADAPTBOT_ADDR"] = "0.0.0.0:0"
	env["ADAPTBOT_ADMIN_TOKEN"] = "s3cret-admin-token"
	in := start(t, env)
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	m := &matrix{t: t, in: in, words: map[string][]string{}, calls: map[string]map[string]int{}}
	m.token = matrixPerson{"admin-token", "s3cret-admin-token", ""}
	m.root, m.bob, m.ann, m.cy = m.add("root", "admin"), m.add("bob", "builder"), m.add("ann", "user"), m.add("cy", "user")
	return m
}

func matrixHeaders(key string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "Accept": "application/json", "Authorization": "Bearer " + key}
}

func (m *matrix) add(name, role string) matrixPerson {
	m.t.Helper()
	code, _, raw := m.in.send(m.t, "POST", "/api/users", `{"name": "`+name+`", "role": "`+role+`"}`, matrixHeaders("s3cret-admin-token"))
	body := jsonBody(m.t, raw)
	if code != 201 {
		m.t.Fatalf("add %s = %d %s", name, code, raw)
	}
	return matrixPerson{name, str(body["key"]), str(body["user"].(map[string]any)["pseudonym"])}
}

// count notes one call of p's through door, which must leave one row.
func (m *matrix) count(p matrixPerson, door string) {
	if m.calls[p.pseudonym] == nil {
		m.calls[p.pseudonym] = map[string]int{}
	}
	m.calls[p.pseudonym][door]++
}

func (m *matrix) post(p matrixPerson, path, body string, want int) map[string]any {
	m.t.Helper()
	code, _, raw := m.in.send(m.t, "POST", path, body, matrixHeaders(p.key))
	if code != want {
		m.t.Fatalf("%s POST %s = %d %s, want %d", p.name, path, code, raw, want)
	}
	return jsonBody(m.t, raw)
}

// leaveWords has each person leave words through each door.
func (m *matrix) leaveWords() {
	t, in, root, bob, ann, cy := m.t, m.in, m.root, m.bob, m.ann, m.cy
	// HTTP JSON: ann's chats (a call that fails on her words; one that
	// works), her thumbs-down with a comment; cy's and root's chats;
	// bob's direct run.
	m.post(ann, "/chat", `{"message": "ann asks annzqx7"}`, 200)
	m.count(ann, "http")
	m.rated = str(m.post(ann, "/chat", `{"message": "ann asks twice"}`, 200)["request_id"])
	m.count(ann, "http")
	m.post(ann, "/api/requests/"+m.rated+"/feedback", `{"score": -1, "comment": "annsaidwrongly"}`, 200)
	m.count(ann, "http")
	m.words[ann.pseudonym] = []string{"annzqx7", "ann asks", "914914", "annsaidwrongly", "annmcp7", "annstdio7"}
	m.post(cy, "/chat", `{"message": "cy says cyhello5"}`, 200)
	m.count(cy, "http")
	m.post(root, "/chat", `{"message": "root says rootword9"}`, 200)
	m.count(root, "http")
	m.words[root.pseudonym] = []string{"rootword9"}
	// The OpenAI-compatible door: cy's conversation.
	if code, _, raw := in.send(t, "POST", "/v1/chat/completions", `{"model": "adaptbot", "messages": [{"role": "user", "content": "cy asks cyopenai5"}]}`, matrixHeaders(cy.key)); code != 200 {
		t.Fatalf("cy's /v1 chat = %d %s", code, raw)
	}
	m.count(cy, "openai")
	m.words[cy.pseudonym] = []string{"cyhello5", "cyopenai5"}
	m.post(bob, "/api/tools/calculator/run", `{"expression": "bobqrs7"}`, 422)
	m.count(bob, "http")

	// SSE: bob's chat stream.
	code, _, raw := in.send(t, "POST", "/chat", `{"message": "bob streams bobsse7"}`, map[string]string{"Content-Type": "application/json",
		"Accept": "text/event-stream", "Authorization": "Bearer " + bob.key})
	if code != 200 || !strings.Contains(string(raw), "event: ") {
		t.Fatalf("bob's stream = %d %s", code, raw)
	}
	m.count(bob, "http")

	// /mcp: bob's call that fails on his words; ann's call, refused (a
	// user may not run tools directly), which still leaves its row.
	m.mcpCall(bob, "bobmcp7")
	m.mcpCall(ann, "annmcp7")

	// stdio MCP: `adaptbot mcp` started elsewhere with the person's
	// ADAPTBOT_KEY forwards to the server, as that person: bob's call that
	// fails on his words; ann's, refused. The server names the door mcp.
	m.stdioCall(bob, "bobstdio7")
	m.stdioCall(ann, "annstdio7")

	// The CLI, through the api client: bob runs the tool.
	if out := m.cli(bob, "tools", "run", "calculator", `{"expression": "bobcli7"}`); !strings.Contains(out, "bobcli7") {
		t.Fatalf("bob's run from the command line: %s", out)
	}
	m.count(bob, "cli")
	m.words[bob.pseudonym] = []string{"bobqrs7", "bobsse7", "bobmcp7", "bobstdio7", "bobcli7"}

	// A version note that quotes a case (as a repair's does).
	notes, _ := filepath.Glob(filepath.Join(in.dir, "tools", ".history", "calculator", "v*"))
	if len(notes) == 0 {
		t.Fatal("no kept version of the calculator")
	}
	note := "Repair of 1 failure case: 1 result.\n- case 0123, input {\"expression\":\"annzqx7\"}: now gives a result\n"
	if err := os.WriteFile(filepath.Join(notes[len(notes)-1], "note.txt"), []byte(note), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFlushed(t, in)
}

// mcpSession opens a session on /mcp with p's key.
func (m *matrix) mcpSession(p matrixPerson) *sdk.ClientSession {
	m.t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "matrix", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: m.in.url + "/mcp",
		HTTPClient: &http.Client{Transport: &keyTransport{key: p.key}}}, nil)
	if err != nil {
		m.t.Fatalf("%s connects over /mcp: %v", p.name, err)
	}
	return cs
}

// mcpCall calls the calculator over /mcp as p, with an expression it
// refuses.
func (m *matrix) mcpCall(p matrixPerson, expr string) {
	m.t.Helper()
	cs := m.mcpSession(p)
	defer cs.Close()
	if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": expr}}); err != nil || !res.IsError {
		m.t.Fatalf("%s's call over /mcp = %+v, %v; want a tool error", p.name, res, err)
	}
	m.count(p, "mcp")
}

// stdioSession runs `adaptbot mcp` as p (ADAPTBOT_KEY is p's key), started
// in a folder of its own, so it forwards to the server; stop ends it.
func (m *matrix) stdioSession(p matrixPerson) (cs *sdk.ClientSession, stop func() error) {
	m.t.Helper()
	env := cliEnv(m.t.TempDir(), serverAddr(m.t, m.in))
	env["ADAPTBOT_KEY"] = p.key
	cs, stop, _ = stdioMCP(m.t, env)
	return cs, stop
}

// stdioCall calls the calculator through `adaptbot mcp` as p, with an
// expression it refuses.
func (m *matrix) stdioCall(p matrixPerson, expr string) {
	m.t.Helper()
	cs, stop := m.stdioSession(p)
	defer stop()
	if text, isErr := callTool(m.t, cs, "calculator", map[string]any{"expression": expr}); !isErr {
		m.t.Fatalf("%s's call through adaptbot mcp = %q; want a tool error", p.name, text)
	}
	m.count(p, "mcp")
}

// cli runs a command as p, through the server, and returns what it said.
func (m *matrix) cli(p matrixPerson, args ...string) string {
	m.t.Helper()
	env := cliEnv(m.in.dir, serverAddr(m.t, m.in))
	env["ADAPTBOT_KEY"] = p.key
	out, err := runEnv(m.t, env, strings.NewReader(""), args...)
	if err != nil {
		out += "\nerror: " + err.Error()
	}
	return out
}

// leaks fails for each word in body that reader may not read.
func (m *matrix) leaks(door string, reader matrixPerson, admin bool, body string) {
	m.t.Helper()
	if admin {
		return
	}
	for author, ws := range m.words {
		if author == reader.pseudonym {
			continue
		}
		for _, w := range ws {
			if strings.Contains(body, w) {
				m.t.Errorf("%s reads another person's words %q through %s: %s", reader.name, w, door, clipBody(body))
			}
		}
	}
}

// readEverywhere has every role read through every GET route, the CLI
// and /mcp.
func (m *matrix) readEverywhere() {
	t := m.t
	var ids []string // the stored requests, to read by ID
	for _, r := range m.in.rows(t) {
		if r["request_id"] != "" {
			ids = append(ids, r["request_id"])
		}
	}
	specs := routeSpecs(t)
	routes := servedRoutes()
	readers := []struct {
		p     matrixPerson
		admin bool
	}{{m.token, true}, {m.root, true}, {m.bob, false}, {m.ann, false}, {m.cy, false}}
	for _, rd := range readers {
		for _, r := range routes {
			if r.Method != fiber.MethodGet {
				continue
			}
			sp, ok := specOf(specs, r)
			if !ok {
				t.Errorf("GET %s has no row in docs/api.md: say whose words it serves", r.Path)
				continue
			}
			rule := sp.words
			if rule == door {
				continue
			}
			paths := []string{r.Path}
			if strings.Contains(r.Path, ":id") {
				paths = paths[:0]
				for _, id := range ids {
					paths = append(paths, strings.ReplaceAll(r.Path, ":id", id))
				}
			}
			for _, p := range paths {
				p = strings.NewReplacer(":name", "calculator", "*", "app.css").Replace(p)
				code, _, raw := m.in.send(t, "GET", p, "", matrixHeaders(rd.p.key))
				if rule == adminOnly && !rd.admin && code/100 == 2 {
					t.Errorf("%s GET %s = %d; it is for admins", rd.p.name, p, code)
				}
				m.leaks("GET "+p, rd.p, rd.admin, string(raw))
			}
		}
		// The CLI, through the api client.
		m.leaks("adaptbot tools failures", rd.p, rd.admin, m.cli(rd.p, "tools", "failures", "calculator", "--format", "json"))
		m.leaks("adaptbot tools history", rd.p, rd.admin, m.cli(rd.p, "tools", "history", "calculator", "--format", "json"))
		// /mcp: what a client lists.
		cs := m.mcpSession(rd.p)
		list, err := cs.ListTools(context.Background(), nil)
		cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		m.leaks("/mcp tools/list", rd.p, rd.admin, str(list))
		// stdio MCP: what `adaptbot mcp` lists, and what a call that
		// fails says, as this reader.
		scs, stop := m.stdioSession(rd.p)
		list, err = scs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("%s lists the tools through adaptbot mcp: %v", rd.p.name, err)
		}
		m.leaks("adaptbot mcp tools/list", rd.p, rd.admin, str(list))
		text, _ := callTool(t, scs, "calculator", map[string]any{"expression": "2+"})
		m.leaks("adaptbot mcp tools/call", rd.p, rd.admin, text)
		if err := stop(); err != nil {
			t.Errorf("%s's adaptbot mcp: %v", rd.p.name, err)
		}
		if rd.p.pseudonym != "" {
			m.count(rd.p, "mcp")
		}
	}
}

// authorsAndAdminsRead: the admins and the authors do get the words, so
// the sweep does not pass because nothing is served.
func (m *matrix) authorsAndAdminsRead() {
	t := m.t
	for _, tc := range []struct {
		p     matrixPerson
		path  string
		wants []string
	}{
		{m.token, "/api/tools/calculator/failures", []string{"annzqx7", "annsaidwrongly", "bobqrs7", "bobmcp7", "bobstdio7", "bobcli7"}},
		{m.root, "/api/tools/calculator/versions", []string{"annzqx7"}},
		{m.ann, "/api/tools/calculator/failures", []string{"annzqx7", "annsaidwrongly", m.rated}},
		{m.bob, "/api/tools/calculator/failures", []string{"bobqrs7", "bobmcp7", "bobstdio7", "bobcli7"}},
		{m.ann, "/api/requests/" + m.rated, []string{"ann asks twice", "annsaidwrongly"}},
	} {
		_, _, raw := m.in.send(t, "GET", tc.path, "", matrixHeaders(tc.p.key))
		for _, w := range tc.wants {
			if !strings.Contains(string(raw), w) {
				t.Errorf("%s GET %s lacks %q: %s", tc.p.name, tc.path, w, clipBody(string(raw)))
			}
		}
	}
	_, _, raw := m.in.send(t, "GET", "/api/tools/calculator/failures", "", matrixHeaders(m.cy.key))
	if !strings.Contains(string(raw), `"withheld":true`) || !strings.Contains(string(raw), `"count":`) {
		t.Errorf("cy reads the failures without the counts, or without saying what is withheld: %s", clipBody(string(raw)))
	}
}

// oneRowPerCall: every call that writes left exactly one row, naming its
// caller and its door.
func (m *matrix) oneRowPerCall() {
	t := m.t
	got := map[string]map[string]int{}
	seen := map[string]bool{}
	for _, r := range m.in.rows(t) {
		if seen[r["request_id"]] {
			t.Errorf("request %s has two rows", r["request_id"])
		}
		seen[r["request_id"]] = true
		if got[r["user"]] == nil {
			got[r["user"]] = map[string]int{}
		}
		got[r["user"]][r["door"]]++
	}
	for _, p := range []matrixPerson{m.root, m.bob, m.ann, m.cy} {
		for d, n := range m.calls[p.pseudonym] {
			if got[p.pseudonym][d] != n {
				t.Errorf("%s made %d calls through %s; the rows name them %d times (all of %s's rows: %v)", p.name, n, d, got[p.pseudonym][d], p.name, got[p.pseudonym])
			}
		}
		for d, n := range got[p.pseudonym] {
			if m.calls[p.pseudonym][d] == 0 {
				t.Errorf("%d rows name %s through %s, who made no call there", n, p.name, d)
			}
		}
	}
}

// everyStoreHasARule: every file under the server's folder that holds a
// person's words is a store with a rule.
func (m *matrix) everyStoreHasARule() {
	var all []string
	for _, ws := range m.words {
		all = append(all, ws...)
	}
	filepath.WalkDir(m.in.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(m.in.dir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, w := range all {
			if !strings.Contains(string(b), w) {
				continue
			}
			known := false
			for _, re := range wordsStores {
				known = known || re.MatchString(filepath.ToSlash(rel))
			}
			if !known {
				m.t.Errorf("%s holds a person's words (%q) and has no rule in wordsStores (app/privacy_matrix_test.go)", rel, w)
			}
			break
		}
		return nil
	})
}

// waitFlushed waits until the failure cases are written (the store writes
// at most once a second).
func waitFlushed(t *testing.T, in *instance) {
	t.Helper()
	poll.Until(t, "the failure cases are written", func() bool {
		b, _ := os.ReadFile(filepath.Join(in.dir, "tools", ".failures", "calculator.json"))
		return strings.Contains(string(b), "bobcli7")
	})
}

func clipBody(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}
