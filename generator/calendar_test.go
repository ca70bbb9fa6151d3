package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	_ "unsafe" // go:linkname, for the sandbox's frame tap

	"adaptbot/approval"
	"adaptbot/egress"
	"adaptbot/egress/egresstest"
	"adaptbot/identity"
	"adaptbot/sandbox"
	"adaptbot/secrets"
	"adaptbot/toolbox"
	"adaptbot/toolkit"
)

// A tool the scripted model builds through the real gate acts on a real
// third-party server: Radicale, Debian's CalDAV server, with its own users
// (egress/egresstest). "Add it to my calendar" is one of issue 37's
// examples.

// addEvent is the tool the scripted model writes: one PUT of an iCalendar
// event, with the caller's credentials as the secret CAL.
const addEvent = `// Package add_event adds an event to a calendar on a CalDAV server (such
// as Radicale or Nextcloud), given the calendar's URL, and says where it
// put it. It never replaces an event that is there already.
package add_event

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"adaptbot/toolkit"
)

// Hosts are the hosts the tool reaches: its requests go to no other.
const Hosts = "cal.example.com"

// Input is the event and the calendar it goes in.
type Input struct {
	Calendar string ` + "`json:\"calendar\" jsonschema:\"the calendar's URL, e.g. https://cal.example.com/alice/work/\"`" + `
	Title    string ` + "`json:\"title\" jsonschema:\"what the event is, e.g. Lunch with Sam\"`" + `
	Start    string ` + "`json:\"start\" jsonschema:\"when it starts, in RFC 3339, e.g. 2026-05-08T12:00:00Z\"`" + `
	Minutes  int    ` + "`json:\"minutes,omitempty\" jsonschema:\"how long it lasts, in minutes; default 60\"`" + `
}

const stamp = "20060102T150405Z"

// Execute puts the event in the calendar with one PUT.
func Execute(ctx context.Context, in Input) (string, error) {
	cal, err := url.Parse(strings.TrimSpace(in.Calendar))
	if err != nil || cal.Scheme != "https" || cal.Host == "" {
		return "", fmt.Errorf("calendar %q is not the https URL of a calendar, such as https://cal.example.com/alice/work/", in.Calendar)
	}
	title := strings.TrimSpace(in.Title)
	if title == "" {
		return "", errors.New("title is empty: say what the event is")
	}
	start, err := time.Parse(time.RFC3339, strings.TrimSpace(in.Start))
	if err != nil {
		return "", fmt.Errorf("start %q is not a time such as 2026-05-08T12:00:00Z", in.Start)
	}
	minutes := in.Minutes
	if minutes <= 0 {
		minutes = 60
	}
	start = start.UTC()
	end := start.Add(time.Duration(minutes) * time.Minute)
	uid := start.Format(stamp) + "-" + slug(title)
	body := strings.Join([]string{
		"BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//AdaptBot//add_event//EN",
		"BEGIN:VEVENT", "UID:" + uid + "@adaptbot", "DTSTAMP:" + start.Format(stamp),
		"DTSTART:" + start.Format(stamp), "DTEND:" + end.Format(stamp),
		"SUMMARY:" + escape(title), "END:VEVENT", "END:VCALENDAR", "",
	}, "\r\n")
	where := strings.TrimSuffix(cal.String(), "/") + "/" + uid + ".ics"
	resp, err := toolkit.Do(ctx, toolkit.Request{Method: "PUT", URL: where, Body: body, Header: map[string]string{
		"Authorization": "Basic {{secret:CAL}}",
		"Content-Type":  "text/calendar; charset=utf-8",
		"If-None-Match": "*",
	}})
	if err != nil {
		return "", fmt.Errorf("adding %q: %w", title, err)
	}
	switch resp.Status {
	case 201, 204:
		return fmt.Sprintf("Added %q on %s for %d minutes to %s.", title, start.Format("Mon 2 Jan 2006 15:04 UTC"), minutes, where), nil
	case 412:
		return "", fmt.Errorf("the calendar already has %q at that time: nothing was changed", title)
	case 401:
		return "", errors.New("the calendar server refused the credentials of the secret CAL (401): set it again")
	case 403:
		return "", errors.New("the calendar server does not let you write to that calendar (403): check its URL")
	}
	return "", fmt.Errorf("the calendar server answered %d: %.200s", resp.Status, resp.Body)
}

// slug makes a title fit a URL: lower-case letters and digits, and dashes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// escape escapes a text value for iCalendar.
func escape(s string) string {
	return strings.NewReplacer("\\", "\\\\", ";", "\\;", ",", "\\,", "\n", "\\n").Replace(s)
}
`

// The examples the model sends with it: the PUT each input makes, as the
// tool writes it (the secret is its placeholder, and in a header, which an
// exchange does not list), and the server's answer.
const (
	exLunch = `{"input": {"calendar": "https://cal.example.com/alice/work/", "title": "Lunch with Sam", "start": "2026-05-08T12:00:00Z"},
 "contains": "Added \"Lunch with Sam\" on Fri 8 May 2026 12:00 UTC",
 "http": [{"request": {"method": "PUT", "url": "https://cal.example.com/alice/work/20260508T120000Z-lunch-with-sam.ics",
   "body": "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//AdaptBot//add_event//EN\r\nBEGIN:VEVENT\r\nUID:20260508T120000Z-lunch-with-sam@adaptbot\r\nDTSTAMP:20260508T120000Z\r\nDTSTART:20260508T120000Z\r\nDTEND:20260508T130000Z\r\nSUMMARY:Lunch with Sam\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"},
  "response": {"status": 201, "headers": {"ETag": "\"abc\""}}}]}`
	exStandup = `{"input": {"calendar": "https://cal.example.com/alice/work", "title": "Standup, daily", "start": "2026-05-11T09:30:00+02:00", "minutes": 15},
 "contains": "for 15 minutes",
 "http": [{"request": {"method": "PUT", "url": "https://cal.example.com/alice/work/20260511T073000Z-standup-daily.ics",
   "body": "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//AdaptBot//add_event//EN\r\nBEGIN:VEVENT\r\nUID:20260511T073000Z-standup-daily@adaptbot\r\nDTSTAMP:20260511T073000Z\r\nDTSTART:20260511T073000Z\r\nDTEND:20260511T074500Z\r\nSUMMARY:Standup\\, daily\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"},
  "response": {"status": 201}}]}`
)

// frameTap is the sandbox's own tap of the frames between the server and
// its workers (sandbox/protocol.go), which its tests set through
// export_test.go; a test of another package reaches it by name.
//
//go:linkname frameTap adaptbot/sandbox.frameTap
var frameTap func(frame []byte)

// recorder keeps what a test must check for a secret's value: frames,
// requests, decisions and what each call gave back.
type recorder struct {
	mu      sync.Mutex
	frames  []string
	events  []egress.Event
	records []approval.Record
	shown   []approval.Approval
	texts   []string // outputs and errors
}

func (r *recorder) add(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// everything is all the recorder holds, as one text.
func (r *recorder) everything() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, f := range r.frames {
		b.WriteString(f + "\n")
	}
	for _, v := range []any{r.events, r.records, r.shown, r.texts} {
		raw, _ := json.Marshal(v)
		b.Write(raw)
		fmt.Fprintf(&b, "\n%+v\n", v)
	}
	return b.String()
}

// TestBuiltToolActsOnARealCalendar: the scripted model builds add_event
// through the real gate, answered from its examples' exchanges with the
// network off, before its author has set the secret it needs; the build
// says how to set it. Then, run in a worker process as the server runs
// tools, it adds an event to a real Radicale server through toolkit.Do,
// the secret CAL and an approval: on Allow the event is there when the
// test reads the calendar back; on Deny and on expiry nothing is written.
// Two people with their own values reach the server as two users, and a
// third without one is told how to set it. No value appears in a frame,
// an output, an error, a request's record, an approval or a decision.
func TestBuiltToolActsOnARealCalendar(t *testing.T) {
	const alicePW, bobPW = "canary-alice-R4d1c4le", "canary-bob-7Qx2Lm9v"
	cal := egresstest.StartRadicale(t, map[string]string{"alice": alicePW, "bob": bobPW})
	aliceCal, err := cal.MakeCalendar("alice", "work")
	if err != nil {
		t.Fatal(err)
	}
	bobCal, err := cal.MakeCalendar("bob", "work")
	if err != nil {
		t.Fatal(err)
	}
	store, err := secrets.Open(&secrets.MemoryBackend{}, []byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	alice := identity.Identity{Name: "alice", Role: identity.User, Pseudonym: "u-alice", Method: identity.Key}
	bob := identity.Identity{Name: "bob", Role: identity.User, Pseudonym: "u-bob", Method: identity.Key}
	carol := identity.Identity{Name: "carol", Role: identity.User, Pseudonym: "u-carol", Method: identity.Key}
	as := func(who identity.Identity) context.Context { return identity.With(context.Background(), who) }

	// The build, by alice, who has not set CAL yet.
	var dns noNetwork
	model, _ := scripted(t, writeTool(addEvent, "Adds an event to a calendar on a CalDAV server.", exLunch, exStandup))
	f := newFixture(t, model, offline(t, &dns, StoreSecrets(store)))
	res, err := f.gen.Build(as(alice), Request{Text: "add lunch with Sam on Friday at noon to my calendar", Op: Create, Tool: "add_event"}, nil)
	if err != nil || !res.OK {
		t.Fatalf("build %+v, %v", res, err)
	}
	if len(res.MissingSecrets) != 1 || res.MissingSecrets[0].Name != "CAL" || res.MissingSecrets[0].Hosts[0] != "cal.example.com" ||
		!strings.Contains(res.Summary, "set it with `adaptbot secrets set CAL --host cal.example.com`") {
		t.Errorf("the build does not say how to set CAL: %+v", res)
	}
	if n := dns.lookups.Load(); n != 0 {
		t.Errorf("the gate looked up %d hosts", n)
	}

	// Each sets their own credentials, as `adaptbot secrets set CAL --host
	// cal.example.com` does.
	for _, who := range []identity.Identity{alice, bob} {
		if _, err := store.Set(as(who), "CAL", cal.Secret(who.Name), []string{"cal.example.com"}, false); err != nil {
			t.Fatal(err)
		}
	}

	// The server's side: egress sends, asks and masks; the tool runs in a
	// worker process.
	var rec recorder
	frameTap = func(b []byte) { rec.add(func() { rec.frames = append(rec.frames, string(b)) }) }
	t.Cleanup(func() { frameTap = nil }) // after the pool has closed
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := sandbox.NewPool(sandbox.Options{
		PoolSize: 1, CallTimeout: 10 * time.Second, MemoryLimit: 256 << 20, MaxGoroutines: 200,
		WorkerCommand: []string{exe}, WorkerEnv: []string{workerEnv + "=1"}, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	broker := approval.New(approval.Options{Timeout: time.Second, OnDecision: func(_ context.Context, r approval.Record) {
		rec.add(func() { rec.records = append(rec.records, r) })
	}})
	host := egress.New(egress.Options{
		Client: toolkit.NewClient(egresstest.ToolkitOptions(cal.Roots)), Secrets: store, Approvals: broker,
		Observe: func(_ context.Context, e egress.Event) { rec.add(func() { rec.events = append(rec.events, e) }) },
	})
	box := toolbox.New(f.reg, pool)
	box.SendWith(host)
	tool, ok := box.Tool("add_event")
	if !ok {
		t.Fatal("add_event does not serve")
	}

	answer := func(d approval.Decision, asked *int) approval.Asker {
		return approval.AskerFunc(func(_ context.Context, a approval.Approval) (approval.Answer, error) {
			rec.add(func() { rec.shown = append(rec.shown, a) })
			*asked++
			return approval.Answer{Decision: d}, nil
		})
	}
	never := approval.AskerFunc(func(ctx context.Context, a approval.Approval) (approval.Answer, error) {
		rec.add(func() { rec.shown = append(rec.shown, a) })
		<-ctx.Done() // nobody answers: it expires
		return approval.Answer{}, ctx.Err()
	})
	call := func(who identity.Identity, asker approval.Asker, calendar, title string) (string, error) {
		args, _ := json.Marshal(map[string]any{"calendar": calendar, "title": title, "start": "2026-05-08T12:00:00Z"})
		out, err := tool.Call(approval.WithAsker(as(who), asker, "chat-"+who.Name), args)
		rec.add(func() { rec.texts = append(rec.texts, out, fmt.Sprint(err)) })
		return out, err
	}
	calendarOf := func(who, path string) string {
		t.Helper()
		got, err := cal.Calendar(who, path)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// Allow: one PUT, and the event is in alice's calendar.
	var asked int
	out, err := call(alice, answer(approval.Allow, &asked), aliceCal, "Lunch with Sam")
	want := "Added \"Lunch with Sam\" on Fri 8 May 2026 12:00 UTC for 60 minutes to " + aliceCal + "20260508T120000Z-lunch-with-sam.ics."
	if err != nil || out != want {
		t.Fatalf("allowed: %q, %v\nwant %q\nradicale: %s", out, err, want, cal.Log())
	}
	if got := calendarOf("alice", "/alice/work/"); !strings.Contains(got, "SUMMARY:Lunch with Sam") || !strings.Contains(got, "UID:20260508T120000Z-lunch-with-sam@adaptbot") {
		t.Errorf("alice's calendar does not hold the event:\n%s", got)
	}
	if asked != 1 || rec.shown[0].Method != "PUT" || rec.shown[0].URL != aliceCal+"20260508T120000Z-lunch-with-sam.ics" ||
		rec.shown[0].Tool != "add_event" || rec.shown[0].Version != 1 || !strings.Contains(rec.shown[0].Body, "SUMMARY:Lunch with Sam") {
		t.Errorf("asked %d times, shown %+v", asked, rec.shown)
	}

	// Deny and expiry: nothing is written, and the tool says so.
	for _, tt := range []struct {
		title string
		asker approval.Asker
		want  string
	}{
		{"Dentist", answer(approval.Deny, &asked), "was denied by the person asked"},
		{"Nobody answered", never, "was not approved within 1s"},
	} {
		out, err := call(alice, tt.asker, aliceCal, tt.title)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "nothing was sent, nothing was changed") {
			t.Errorf("%s: %q, %v; want an error saying %q", tt.title, out, err, tt.want)
		}
		if got := calendarOf("alice", "/alice/work/"); strings.Contains(got, tt.title) {
			t.Errorf("%s was written:\n%s", tt.title, got)
		}
	}

	// Bob's value makes him Bob on the server: his event goes in his
	// calendar, and alice's he may not write to.
	if out, err := call(bob, answer(approval.Allow, &asked), bobCal, "Review with Kim"); err != nil || !strings.HasPrefix(out, "Added \"Review with Kim\"") {
		t.Fatalf("bob: %q, %v", out, err)
	}
	if got := calendarOf("bob", "/bob/work/"); !strings.Contains(got, "SUMMARY:Review with Kim") {
		t.Errorf("bob's calendar does not hold his event:\n%s", got)
	}
	if _, err := call(bob, answer(approval.Allow, &asked), aliceCal, "Intrusion"); err == nil || !strings.Contains(err.Error(), "(403)") {
		t.Errorf("bob writing to alice's calendar: %v", err)
	}
	if got := calendarOf("alice", "/alice/work/"); strings.Contains(got, "Review with Kim") || strings.Contains(got, "Intrusion") {
		t.Errorf("bob's events are in alice's calendar:\n%s", got)
	}

	// Carol has no value: she is told how to set it, and nobody is asked.
	before := asked
	if _, err := call(carol, answer(approval.Allow, &asked), aliceCal, "Carol's"); err == nil ||
		!strings.Contains(err.Error(), "the secret CAL is not set for you: set it with `adaptbot secrets set CAL --host cal.example.com`") {
		t.Errorf("carol: %v", err)
	}
	if asked != before {
		t.Error("carol was asked to approve a request that could not be sent")
	}

	// Each decision is recorded, and each request says what it became.
	rec.mu.Lock()
	var outcomes []string
	for _, r := range rec.records {
		outcomes = append(outcomes, string(r.Outcome))
	}
	var sent []bool
	for _, e := range rec.events {
		sent = append(sent, e.Sent)
	}
	rec.mu.Unlock()
	if want := "allowed denied expired allowed allowed"; strings.Join(outcomes, " ") != want {
		t.Errorf("decisions %q, want %q", outcomes, want)
	}
	if want := "[true false false true true false]"; fmt.Sprint(sent) != want {
		t.Errorf("sent %v, want %v", sent, want)
	}

	// No value, in any form, where it may not go.
	all := rec.everything()
	if len(rec.frames) < 8 {
		t.Errorf("only %d frames seen", len(rec.frames))
	}
	for _, v := range []string{cal.Secret("alice"), cal.Secret("bob"), alicePW, bobPW} {
		if leaks := egresstest.Leaks(all, v); len(leaks) > 0 {
			t.Errorf("%q is seen as %q", v, leaks)
		}
	}
}
