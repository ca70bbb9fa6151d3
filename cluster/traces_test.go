package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/poll"
	"adaptbot/traces"
)

func openTraces(t *testing.T, url, id string, opts traces.Options) *cluster.Traces {
	t.Helper()
	tr, err := cluster.OpenTraces(context.Background(), connect(t, url, id), opts, t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// TestTracesAreSharedByReplicas: a record written through replica A is read
// through B; a rating B stores replaces it for both, and Recent lists each
// request once, newest first.
func TestTracesAreSharedByReplicas(t *testing.T) {
	srv := clustertest.Start(t)
	a := openTraces(t, srv.URL(), "a", traces.Options{})
	b := openTraces(t, srv.URL(), "b", traces.Options{})
	for i := range 3 {
		if err := a.Add(traces.Record{ID: fmt.Sprintf("r%d", i), Kind: traces.Chat, Query: "q", User: "p-ana", Result: json.RawMessage(`{"response":"ok"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := b.Get("r1")
	if err != nil || r.Query != "q" || r.User != "p-ana" || string(r.Result) != `{"response":"ok"}` {
		t.Fatalf("B reads A's trace: %+v, %v", r, err)
	}
	r.Rating = &traces.Rating{Score: -1, Comment: "wrong", RequestID: "f1"}
	if err := b.Add(r); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Get("r1"); err != nil || got.Rating == nil || got.Rating.Comment != "wrong" {
		t.Errorf("A reads B's rating: %+v, %v", got, err)
	}
	var ids []string
	for _, r := range a.Recent(10) {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, " ") != "r1 r2 r0" {
		t.Errorf("recent = %v, want each request once, newest first", ids)
	}
	for _, bad := range []string{"nope", "a.b", "*", ">", ""} {
		if _, err := b.Get(bad); !errors.Is(err, traces.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want not found", bad, err)
		}
	}
	if err := a.Add(traces.Record{ID: "x.>"}); err == nil {
		t.Error("a record whose ID is not a subject token was stored")
	}
}

// TestTracesAreBounded: the stream keeps about twice MaxBytes, dropping the
// oldest, as the file store does.
func TestTracesAreBounded(t *testing.T) {
	srv := clustertest.Start(t)
	tr := openTraces(t, srv.URL(), "a", traces.Options{MaxBytes: 4 << 10})
	big := strings.Repeat("x", 1<<10)
	for i := range 20 {
		if err := tr.Add(traces.Record{ID: fmt.Sprintf("r%d", i), Query: big}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tr.Get("r0"); !errors.Is(err, traces.ErrNotFound) {
		t.Errorf("the oldest record is still kept past the bound: %v", err)
	}
	if _, err := tr.Get("r19"); err != nil {
		t.Errorf("the newest record: %v", err)
	}
}

// TestTracesWrittenWhileNATSIsAwayArrive checks that a record written
// while NATS is away is kept (in the spool) and read through another
// replica once NATS is back.
func TestTracesWrittenWhileNATSIsAwayArrive(t *testing.T) {
	srv := clustertest.Start(t)
	a := openTraces(t, srv.URL(), "a", traces.Options{})
	srv.Stop()
	if err := a.Add(traces.Record{ID: "away1", Kind: traces.Chat, Query: "while NATS is away"}); err != nil {
		t.Fatalf("a record while NATS is away: %v", err)
	}
	if a.Spooled() != 1 {
		t.Errorf("spooled: %d, want 1", a.Spooled())
	}
	srv.Restart()
	b := openTraces(t, srv.URL(), "b", traces.Options{})
	poll.Until(t, "the record reaches the stream", func() bool {
		r, err := b.Get("away1")
		return err == nil && r.Query == "while NATS is away"
	})
	poll.Until(t, "the spool empties", func() bool { return a.Spooled() == 0 })
}
