package egresstest

import (
	"net/http"
	"strings"
	"testing"
)

// TestRadicale: the server answers over TLS under the test's certificate,
// asks for credentials, keeps what its user writes, and lets no one write
// in another's calendar.
func TestRadicale(t *testing.T) {
	r := StartRadicale(t, map[string]string{"alice": "alice-pw-1", "bob": "bob-pw-2"})
	cal, err := r.MakeCalendar("alice", "work")
	if err != nil {
		t.Fatal(err)
	}
	if cal != r.URL("/alice/work/") || !strings.HasPrefix(cal, "https://cal.example.com:") {
		t.Errorf("calendar URL %q", cal)
	}
	event := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//adaptbot//test//EN\r\nBEGIN:VEVENT\r\nUID:t1@adaptbot\r\nDTSTAMP:20260508T120000Z\r\nDTSTART:20260508T120000Z\r\nDTEND:20260508T130000Z\r\nSUMMARY:Lunch\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	ics := map[string]string{"Content-Type": "text/calendar"}
	for _, tt := range []struct {
		user string
		want int
	}{{"", http.StatusUnauthorized}, {"bob", http.StatusForbidden}, {"alice", http.StatusCreated}} {
		status, body, err := r.Do(tt.user, http.MethodPut, "/alice/work/t1.ics", ics, event)
		if err != nil || status != tt.want {
			t.Errorf("PUT as %q: %d %q, %v; want %d", tt.user, status, body, err, tt.want)
		}
	}
	got, err := r.Calendar("alice", "/alice/work/")
	if err != nil || !strings.Contains(got, "SUMMARY:Lunch") {
		t.Errorf("alice's calendar: %q, %v", got, err)
	}
	if _, err := r.Calendar("bob", "/alice/work/"); err == nil {
		t.Error("bob read alice's calendar")
	}
	if r.Secret("alice") != Basic("alice", "alice-pw-1") {
		t.Error("Secret is not the user's Basic credentials")
	}
}

func TestForms(t *testing.T) {
	v := "canary-Zq8xR2vT5mK9"
	text := "prefix " + Basic("u", v) + " suffix"
	if got := Leaks("nothing here", v); len(got) != 0 {
		t.Errorf("leaks in a clean text: %q", got)
	}
	if got := Leaks(text, v); len(got) == 0 {
		t.Errorf("base64 of u:%s inside a text was not found", v)
	}
}
