package service

import (
	"encoding/json"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/identity"
)

var (
	ana   = identity.Identity{Name: "ana", Role: identity.User, Pseudonym: "p-ana", Method: identity.Key}
	bo    = identity.Identity{Name: "bo", Role: identity.Builder, Pseudonym: "p-bo", Method: identity.Key}
	root  = identity.Identity{Name: "root", Role: identity.Admin, Pseudonym: "p-root", Method: identity.Key}
	token = identity.Identity{Name: "admin-token", Role: identity.Admin, Method: identity.Token}
)

// anaCase is ana's call that failed, quoting her words in its error, with
// her thumbs-down comment.
var anaCase = failures.Case{ID: "c1", Tool: "t", Version: 2, Args: json.RawMessage(`{"city":"Ljubljana secret","n":7}`), Exact: true,
	Kind: adaptbot.FailError, Message: `unknown city "Ljubljana secret"`, Comment: "my own words", Count: 3, RequestID: "00000000000000aa",
	Status: failures.Open, Authors: []string{"p-ana"}, CommentBy: "p-ana", RequestBy: "p-ana"}

// TestCaseForShowsWordsToAuthorsAndAdmins: a case's arguments, comment and
// request are its authors' and admins'; a builder (or another user) reads
// the kind, the error without the arguments it quotes, the counts, the
// version and the status.
func TestCaseForShowsWordsToAuthorsAndAdmins(t *testing.T) {
	for _, who := range []identity.Identity{ana, root, token, identity.Local} {
		if got := caseFor(who, anaCase); string(got.Args) != string(anaCase.Args) || got.Comment != anaCase.Comment || got.RequestID != anaCase.RequestID || got.Message != anaCase.Message || got.Withheld {
			t.Errorf("%s reads %+v, want the case whole", who.Name, got)
		}
	}
	if got := caseFor(ana, anaCase); got.Authors != nil || got.CommentBy != "" {
		t.Errorf("ana reads the authors %v %q; only admins do", got.Authors, got.CommentBy)
	}
	for _, who := range []identity.Identity{bo, {Name: "cy", Role: identity.User, Pseudonym: "p-cy"}, {Name: "nopseud", Role: identity.Builder}} {
		got := caseFor(who, anaCase)
		if got.Args != nil || got.Comment != "" || got.RequestID != "" || !got.Withheld || got.Authors != nil || got.RequestBy != "" {
			t.Errorf("%s reads %+v, want no words of ana's", who.Name, got)
		}
		if strings.Contains(got.Message, "Ljubljana") || got.Kind != adaptbot.FailError || got.Count != 3 || got.Version != 2 || got.Status != failures.Open {
			t.Errorf("%s reads %+v, want the kind, the error (masked), the count, the version and the status", who.Name, got)
		}
	}
	// A case of a release before authors names nobody: admins alone.
	old := anaCase
	old.Authors, old.CommentBy, old.RequestBy = nil, "", ""
	if got := caseFor(ana, old); got.Args != nil || got.Comment != "" || !got.Withheld {
		t.Errorf("a case without authors, as ana reads it = %+v", got)
	}
	if got := caseFor(root, old); string(got.Args) != string(old.Args) {
		t.Errorf("a case without authors, as an admin reads it = %+v", got)
	}
	// An admin's comment on ana's request: ana reads her arguments, not
	// the admin's words.
	rated := anaCase
	rated.CommentBy = "p-root"
	if got := caseFor(ana, rated); got.Comment != "" || string(got.Args) != string(anaCase.Args) {
		t.Errorf("ana reads %+v, want her arguments and not the admin's comment", got)
	}
}

// TestRepairForWithholdsOthersCases: a builder who repairs from other
// people's cases reads how each case did, without its input, output, or
// the words of it that the model quoted; field names stay.
func TestRepairForWithholdsOthersCases(t *testing.T) {
	res := &generator.Result{Tool: "t", OK: true, Summary: "handles Ljubljana secret now",
		Log:   []generator.Attempt{{Number: 1, Errors: []string{`case 1: input {"city":"Ljubljana secret"} failed`}, Source: `if city == "Ljubljana secret" {`}},
		Cases: []generator.CaseResult{{ID: "c1", Input: anaCase.Args, OK: true, Outcome: generator.OutcomeResult, Output: "Ljubljana secret: 3"}}}
	cases := []failures.Case{anaCase}
	got := repairFor(bo, cases, res)
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), "Ljubljana") || strings.Contains(string(b), "my own words") {
		t.Errorf("bo reads %s", b)
	}
	if len(got.Cases) != 1 || got.Cases[0].ID != "c1" || !got.Cases[0].OK || got.Cases[0].Outcome != generator.OutcomeResult || !got.OK || len(got.Log) != 1 {
		t.Errorf("bo reads %+v, want each case's outcome and the log", got)
	}
	if res.Cases[0].Output == "" || !strings.Contains(res.Summary, "Ljubljana") {
		t.Error("repairFor changed the result it was given")
	}
	if got := repairFor(ana, cases, res); got != res {
		t.Errorf("ana, whose case it is, reads %+v", got)
	}
	if got := repairFor(root, cases, res); got != res {
		t.Errorf("an admin reads %+v", got)
	}
	var seen []generator.Event
	progressFor(bo, cases, func(ev generator.Event) { seen = append(seen, ev) })(generator.Event{Stage: "repair", Problems: []string{"Ljubljana secret fails"}})
	if len(seen) != 1 || seen[0].Stage != "repair" || strings.Contains(seen[0].Problems[0], "Ljubljana") {
		t.Errorf("bo's progress = %+v", seen)
	}
}

// TestNoteForKeepsTheFirstLine: a version's note says what changed on its
// first line, for everyone; the rest quotes people, for admins.
func TestNoteForKeepsTheFirstLine(t *testing.T) {
	note := "Repair of 1 failure case: 1 result.\n- case c1, input {\"city\":\"Ljubljana secret\"}: now gives a result\n"
	if got := noteFor(root, note); got != note {
		t.Errorf("an admin reads %q", got)
	}
	for _, who := range []identity.Identity{ana, bo} {
		if got := noteFor(who, note); strings.Contains(got, "Ljubljana") || !strings.HasPrefix(got, "Repair of 1 failure case: 1 result.") {
			t.Errorf("%s reads %q", who.Name, got)
		}
	}
	if got := noteFor(bo, "Rollback."); got != "Rollback." {
		t.Errorf("a one-line note reads %q", got)
	}
}

// TestRepairsForWithholdsQuotedCases: a failed repair's error, kept with
// the tool's cases, may quote a case; whoever did not send it reads the
// error without those words.
func TestRepairsForWithholdsQuotedCases(t *testing.T) {
	rs := []failures.Repair{{From: 2, Cases: []string{"c1"}, Error: `failing case 1 of 1 (input {"city":"Ljubljana secret"}) still panics`}}
	got := repairsFor(bo, []failures.Case{anaCase}, rs)
	if strings.Contains(got[0].Error, "Ljubljana") || !strings.Contains(got[0].Error, "still panics") || got[0].From != 2 {
		t.Errorf("bo reads the repair %+v", got[0])
	}
	if !strings.Contains(rs[0].Error, "Ljubljana") {
		t.Error("repairsFor changed the records it was given")
	}
	for _, who := range []identity.Identity{ana, root} {
		if got := repairsFor(who, []failures.Case{anaCase}, rs); got[0].Error != rs[0].Error {
			t.Errorf("%s reads the repair %+v", who.Name, got[0])
		}
	}
}

// BenchmarkFailureReportView is what showing a tool's cases (MaxKeep of
// them) costs per read, for an admin (nothing to withhold) and for a
// builder who sent none of them (every case withheld and its error masked).
func BenchmarkFailureReportView(b *testing.B) {
	cases := make([]failures.Case, failures.MaxKeep)
	for i := range cases {
		c := anaCase
		c.Args = json.RawMessage(`{"city":"Ljubljana secret ` + strings.Repeat("x", i%7) + `","n":7,"tags":["alpha","beta gamma"]}`)
		cases[i] = c
	}
	for _, who := range []identity.Identity{root, bo} {
		b.Run(who.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, c := range cases {
					caseFor(who, c)
				}
				repairsFor(who, cases, []failures.Repair{{Error: "failing case 1 of 1 still panics"}})
			}
		})
	}
}
