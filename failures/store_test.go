package failures

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

func load(t *testing.T, b Backend, keep int) *Store {
	t.Helper()
	s, err := Load(context.Background(), b, Options{Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRecordDeduplicatesByToolVersionAndArguments(t *testing.T) {
	s := load(t, &Files{Dir: t.TempDir()}, 0)
	id1, fresh1 := s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{"text": ""}`), Kind: adaptbot.FailPanic, Message: "index out of range", RequestID: "r1"})
	id2, fresh2 := s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{"text":""}`), Kind: adaptbot.FailPanic, Message: "index out of range", RequestID: "r2"})
	id3, fresh3 := s.Record(Call{Tool: "echo", Version: 2, Args: json.RawMessage(`{"text":""}`), Kind: adaptbot.FailPanic, RequestID: "r3"})
	if id1 != id2 || !fresh1 || fresh2 {
		t.Errorf("the same arguments (spaced differently) are not one case: %s %v, %s %v", id1, fresh1, id2, fresh2)
	}
	if id3 == id1 || !fresh3 {
		t.Errorf("another version is not another case: %s %v", id3, fresh3)
	}
	st := s.Get("echo")
	if len(st.Cases) != 2 {
		t.Fatalf("cases = %+v", st.Cases)
	}
	c, _ := s.Case("echo", id1)
	if c.Count != 2 || c.RequestID != "r2" || string(c.Args) != `{"text":""}` || !c.Exact || c.Status != Open || !c.Repairable() {
		t.Errorf("case = %+v", c)
	}
}

func TestArgumentsAreCapped(t *testing.T) {
	s := load(t, &Files{Dir: t.TempDir()}, 0)
	long := `{"text":"` + strings.Repeat("é", MaxArgs) + `"}`
	id, _ := s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(long), Kind: adaptbot.FailError, Message: strings.Repeat("m", 10*MaxMessage)})
	c, _ := s.Case("echo", id)
	var text string
	if err := json.Unmarshal(c.Args, &text); err != nil {
		t.Fatalf("cut arguments are not a JSON string: %s", c.Args)
	}
	if c.Exact || c.Repairable() || c.ArgsBytes != len(long) || len(text) > MaxArgs+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(text, "…")) {
		t.Errorf("case = exact %v, %d bytes, kept %d", c.Exact, c.ArgsBytes, len(text))
	}
	if len(c.Message) > MaxMessage+len("…") {
		t.Errorf("message kept %d bytes", len(c.Message))
	}
	// Arguments that are not JSON are kept as text, and never replayed.
	id, _ = s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{broken`), Kind: adaptbot.FailInvalidArgs})
	if c, _ := s.Case("echo", id); c.Exact || string(c.Args) != `"{broken"` {
		t.Errorf("broken arguments kept as %s, exact %v", c.Args, c.Exact)
	}
}

// TestKeepBoundsEachTool: past Keep cases, the least recently seen go first,
// in memory and on disk.
func TestKeepBoundsEachTool(t *testing.T) {
	dir := t.TempDir()
	s := load(t, &Files{Dir: dir}, 5)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Kind: adaptbot.FailError, At: base.Add(time.Duration(i) * time.Minute)})
		if i == 6 {
			if err := s.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// n=2 is seen again: it is recent now and stays.
	s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{"n":2}`), Kind: adaptbot.FailError, At: base.Add(time.Hour)})
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := argsOf(s.Get("echo").Cases)
	if want := `{"n":2} {"n":11} {"n":10} {"n":9} {"n":8}`; got != want {
		t.Errorf("kept %s, want %s", got, want)
	}
	s2 := load(t, &Files{Dir: dir}, 5)
	if got2 := argsOf(s2.Get("echo").Cases); got2 != got {
		t.Errorf("after a restart: %s, want %s", got2, got)
	}
	if c, _ := s2.Case("echo", s2.Get("echo").Cases[0].ID); c.Count != 2 {
		t.Errorf("count of n=2 after a restart = %d", c.Count)
	}
}

func argsOf(cs []Case) string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Args))
	}
	return strings.Join(out, " ")
}

// counting is a backend that counts its updates and may fail them.
type counting struct {
	Files
	mu      sync.Mutex
	updates map[string]int
	fail    error
}

func (c *counting) Update(ctx context.Context, tool string, change func(State) State) (State, error) {
	c.mu.Lock()
	c.updates[tool]++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return State{}, fail
	}
	return c.Files.Update(ctx, tool, change)
}

// TestHostileToolCannotFloodTheDisk: a tool failing on purpose, thousands
// of times with arguments never seen before, costs one write per flush and
// a bounded file.
func TestHostileToolCannotFloodTheDisk(t *testing.T) {
	dir := t.TempDir()
	b := &counting{Files: Files{Dir: dir}, updates: map[string]int{}}
	s := load(t, b, 50)
	msg := strings.Repeat("x", 100<<10)
	for i := range 5000 {
		args := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("p", 5<<10))
		s.Record(Call{Tool: "hostile", Version: 1, Args: json.RawMessage(args), Kind: adaptbot.FailPanic, Message: msg})
		if len(s.tools["hostile"].pending.deltas) > 50 {
			t.Fatalf("pending cases grew to %d", len(s.tools["hostile"].pending.deltas))
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b.updates["hostile"] != 1 {
		t.Errorf("5000 failures wrote %d times, want once", b.updates["hostile"])
	}
	info, err := os.Stat(filepath.Join(dir, "hostile.json"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > 50*(MaxArgs+MaxMessage+1<<10) {
		t.Errorf("the file is %d bytes", info.Size())
	}
	if n := len(s.Get("hostile").Cases); n != 50 {
		t.Errorf("kept %d cases", n)
	}
}

// TestFailedWriteIsKeptForTheNext: a backend that fails (NATS away) loses
// nothing: the next flush writes what the failed one held and what came
// since.
func TestFailedWriteIsKeptForTheNext(t *testing.T) {
	b := &counting{Files: Files{Dir: t.TempDir()}, updates: map[string]int{}, fail: errors.New("away")}
	s := load(t, b, 0)
	id, _ := s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{}`), Kind: adaptbot.FailError})
	s.AddRepair("echo", Repair{From: 1, Cases: []string{id}})
	if err := s.Flush(context.Background()); err == nil {
		t.Fatal("flush did not report the failed write")
	}
	s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{}`), Kind: adaptbot.FailError})
	b.fail = nil
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := (&Files{Dir: b.Dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cs := st["echo"].Cases; len(cs) != 1 || cs[0].Count != 2 || len(st["echo"].Repairs) != 1 {
		t.Errorf("kept %+v", st["echo"])
	}
}

func TestFeedbackCasesWaitForAPerson(t *testing.T) {
	s := load(t, &Files{Dir: t.TempDir()}, 0)
	id, _ := s.Record(Call{Tool: "calc", Version: 3, Args: json.RawMessage(`{"x":1}`), Kind: adaptbot.FailFeedback, Message: "a person said the answer was wrong", Comment: "2+2 is not 5"})
	c, _ := s.Case("calc", id)
	if c.Status != Unconfirmed || c.Repairable() || c.Comment != "2+2 is not 5" {
		t.Fatalf("feedback case = %+v", c)
	}
	if err := s.Confirm("calc", id); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Case("calc", id); c.Status != Open || !c.Repairable() {
		t.Errorf("confirmed case = %+v", c)
	}
	if err := s.Confirm("calc", "nope"); !errors.Is(err, ErrNoCase) {
		t.Errorf("confirm of an unknown case = %v", err)
	}
	// Dismissed, it is gone, on disk too.
	id2, _ := s.Record(Call{Tool: "calc", Version: 3, Args: json.RawMessage(`{"x":2}`), Kind: adaptbot.FailFeedback, At: time.Now().Add(-time.Second)})
	if err := s.Dismiss("calc", id2); err != nil {
		t.Fatal(err)
	}
	s.Flush(context.Background())
	if _, ok := s.Case("calc", id2); ok {
		t.Error("a dismissed case is still there")
	}
	// The tool failing on the same arguments later brings it back, as a
	// failure this time.
	s.Record(Call{Tool: "calc", Version: 3, Args: json.RawMessage(`{"x":2}`), Kind: adaptbot.FailPanic, Message: "boom", At: time.Now().Add(time.Second)})
	if c, ok := s.Case("calc", id2); !ok || c.Kind != adaptbot.FailPanic || c.Status != Open {
		t.Errorf("after a new failure: %+v %v", c, ok)
	}
}

func TestAFailureOutranksFeedback(t *testing.T) {
	s := load(t, &Files{Dir: t.TempDir()}, 0)
	args := json.RawMessage(`{"x":1}`)
	id, _ := s.Record(Call{Tool: "t", Version: 1, Args: args, Kind: adaptbot.FailTimeout, Message: "ran past its limit"})
	s.Flush(context.Background())
	s.Record(Call{Tool: "t", Version: 1, Args: args, Kind: adaptbot.FailFeedback, Comment: "slow and wrong"})
	c, _ := s.Case("t", id)
	if c.Kind != adaptbot.FailTimeout || c.Status != Open || c.Message != "ran past its limit" || c.Comment != "slow and wrong" || c.Count != 2 {
		t.Errorf("case = %+v", c)
	}
}

func TestFixedAndRepairsAreKept(t *testing.T) {
	dir := t.TempDir()
	s := load(t, &Files{Dir: dir}, 0)
	id, _ := s.Record(Call{Tool: "t", Version: 1, Args: json.RawMessage(`{}`), Kind: adaptbot.FailPanic})
	for i := range MaxRepairs + 3 {
		s.AddRepair("t", Repair{From: 1, Version: 2 + i, OK: true, Cases: []string{id}, Fixed: []string{id}})
	}
	if err := s.Fixed("t", 2, id); err != nil {
		t.Fatal(err)
	}
	s.Flush(context.Background())
	st := load(t, &Files{Dir: dir}, 0).Get("t")
	if len(st.Repairs) != MaxRepairs || st.Repairs[len(st.Repairs)-1].Version != MaxRepairs+4 {
		t.Errorf("repairs = %+v", st.Repairs)
	}
	if st.Cases[0].FixedIn != 2 {
		t.Errorf("case = %+v", st.Cases[0])
	}
}

// TestReplaceKeepsWhatIsNotWrittenYet: another replica's state arrives
// while this one has failures not written yet: both count.
func TestReplaceKeepsWhatIsNotWrittenYet(t *testing.T) {
	s := load(t, &Files{Dir: t.TempDir()}, 0)
	id, _ := s.Record(Call{Tool: "t", Version: 1, Args: json.RawMessage(`{}`), Kind: adaptbot.FailPanic})
	remote := State{Cases: []Case{{ID: id, Tool: "t", Version: 1, Args: json.RawMessage(`{}`), Exact: true, Kind: adaptbot.FailPanic, Count: 5, Status: Open, LastSeen: time.Now().Add(-time.Hour)}}}
	s.Replace("t", remote)
	if c, _ := s.Case("t", id); c.Count != 6 {
		t.Errorf("count = %d, want 5 there and 1 here", c.Count)
	}
}

// TestCorruptFileIsMovedAside: a file that does not parse is reported and
// set aside; the other tools' cases load, and the store works.
func TestCorruptFileIsMovedAside(t *testing.T) {
	dir := t.TempDir()
	good := load(t, &Files{Dir: dir}, 0)
	good.Record(Call{Tool: "ok", Version: 1, Kind: adaptbot.FailPanic})
	good.Flush(context.Background())
	os.WriteFile(filepath.Join(dir, "t.json"), []byte("{not json"), 0o644)
	s, err := Load(context.Background(), &Files{Dir: dir}, Options{})
	if err == nil || s == nil || len(s.Get("ok").Cases) != 1 {
		t.Fatalf("Load = %v, %v; want the store, and the corrupt file reported", s, err)
	}
	s.Record(Call{Tool: "t", Version: 1, Kind: adaptbot.FailPanic})
	if err := s.Flush(context.Background()); err != nil {
		t.Errorf("flush after a corrupt file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t.json.corrupt")); err != nil {
		t.Errorf("not moved aside: %v", err)
	}
	if _, err := Load(context.Background(), &Files{Dir: dir}, Options{}); err != nil {
		t.Errorf("second load: %v", err)
	}
}

func TestCaseKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		want adaptbot.Failure
	}{
		{&sandbox.Error{Kind: adaptbot.FailError}, adaptbot.FailError},
		{&sandbox.Error{Kind: adaptbot.FailPanic}, adaptbot.FailPanic},
		{&sandbox.Error{Kind: adaptbot.FailCrash}, adaptbot.FailCrash}, // the word of its row and its trace step
		{&sandbox.Error{Kind: adaptbot.FailTimeout}, adaptbot.FailTimeout},
		{&sandbox.Error{Kind: adaptbot.FailMemory}, adaptbot.FailMemory},
		{&sandbox.Error{Kind: adaptbot.FailBadOutput}, adaptbot.FailBadOutput},
		{&sandbox.Error{Kind: adaptbot.FailInvalidArgs}, adaptbot.FailInvalidArgs},
		{fmt.Errorf("wrapped: %w", &toolbox.ArgsError{Tool: "t"}), adaptbot.FailInvalidArgs},
		{&sandbox.Error{Kind: adaptbot.FailUnavailable}, ""},
		{&sandbox.Error{Kind: adaptbot.FailCompile}, ""},
		{fmt.Errorf("tool t: %w", context.Canceled), ""},
		{errors.New("who knows"), ""},
		{nil, ""},
	} {
		if got := CaseKind(c.err); got != c.want {
			t.Errorf("CaseKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestMessages(t *testing.T) {
	if got := Message(fmt.Errorf("run: %w", &sandbox.Error{Tool: "t", Kind: adaptbot.FailPanic, Msg: "index out of range"})); got != "index out of range" {
		t.Errorf("Message(sandbox) = %q", got)
	}
	if got := Message(&toolbox.ArgsError{Tool: "t", Reason: `"x" is required`}); got != `"x" is required` {
		t.Errorf("Message(args) = %q", got)
	}
}

// TestCompactValidMatchesTheStandardLibrary: the fast compaction of
// arguments that passed a schema gives what json.Compact gives.
func TestCompactValidMatchesTheStandardLibrary(t *testing.T) {
	for _, in := range []string{
		`{}`, `{ "a" : 1 }`, "{\n\t\"text\": \"two  spaces\\\" and \\\\\",\r\n \"n\": [1, 2,\t3], \"o\": {\"k\": null}}",
		`{"s":"\u00e9 \" } {"}`, `{"a":true ,"b":false}`,
	} {
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(in)); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := compactValid([]byte(in)); string(got) != want.String() {
			t.Errorf("compactValid(%s) = %s, want %s", in, got, want.String())
		}
	}
}
