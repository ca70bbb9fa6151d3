package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/poll"
)

// tally is a Sink that counts rows by request id.
type tally struct {
	mu   sync.Mutex
	byID map[string]int
	n    int
}

func (t *tally) Add(r benchmarks.Row) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]int{}
	}
	t.byID[r.RequestID]++
	t.n++
}

func (t *tally) count() (int, map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := map[string]int{}
	for k, v := range t.byID {
		m[k] = v
	}
	return t.n, m
}

func openRows(t *testing.T, url, replica string) *cluster.Rows {
	t.Helper()
	r, err := cluster.OpenRows(connect(t, url, replica), cluster.RowsOptions{Replica: replica, SpoolDir: t.TempDir(), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func follow(t *testing.T, url string) *tally {
	t.Helper()
	sink := &tally{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cluster.Follow(ctx, connect(t, url, "follower"), sink, nil, quiet) //nolint:errcheck
	}()
	t.Cleanup(func() { cancel(); <-done })
	return sink
}

func row(id string) benchmarks.Row {
	return benchmarks.Row{Timestamp: time.Now().UTC(), Query: "q " + id, Intent: adaptbot.IntentChat, RequestID: id, Latency: time.Millisecond}
}

func TestRowsFromTwoReplicasAreCountedOnce(t *testing.T) {
	srv := clustertest.Start(t)
	a, b := openRows(t, srv.URL(), "replica-a"), openRows(t, srv.URL(), "replica.b") // a dot must not split the subject
	sinkA, sinkB := follow(t, srv.URL()), follow(t, srv.URL())
	const n = 50
	for i := range n {
		a.Add(row(fmt.Sprintf("a%d", i)))
		b.Add(row(fmt.Sprintf("b%d", i)))
	}
	// The same request sent again (a lost ack, a restart before the spool
	// was cleared) is stored once; the same request id from another
	// replica is another row.
	a.Add(row("a0"))
	b.Add(row("a0"))
	const want = 2*n + 1
	for name, sink := range map[string]*tally{"A": sinkA, "B": sinkB} {
		poll.Until(t, "replica "+name+" sees every row", func() bool { got, _ := sink.count(); return got >= want })
	}
	time.Sleep(100 * time.Millisecond) // room for a duplicate to show up
	for name, sink := range map[string]*tally{"A": sinkA, "B": sinkB} {
		got, byID := sink.count()
		if got != want {
			t.Errorf("replica %s counted %d rows, want %d", name, got, want)
		}
		if byID["a0"] != 2 || byID["a1"] != 1 || byID["b1"] != 1 {
			t.Errorf("replica %s: a0 %d times (want 2: one per replica), a1 %d, b1 %d (want 1)", name, byID["a0"], byID["a1"], byID["b1"])
		}
	}
	if a.Spooled() != 0 || b.Spooled() != 0 {
		t.Errorf("spooled after publishing: %d, %d", a.Spooled(), b.Spooled())
	}
}

func TestNATSRestartLosesNoRow(t *testing.T) {
	srv := clustertest.Start(t)
	rows := openRows(t, srv.URL(), "replica-a")
	sink := follow(t, srv.URL())
	for i := range 10 {
		rows.Add(row(fmt.Sprintf("before%d", i)))
	}
	poll.Until(t, "the first rows are published", func() bool { return rows.Spooled() == 0 })

	srv.Stop()
	for i := range 10 {
		rows.Add(row(fmt.Sprintf("during%d", i)))
	}
	if got := rows.Spooled(); got != 10 {
		t.Errorf("spooled while NATS is down: %d, want 10", got)
	}
	srv.Restart()
	for i := range 10 {
		rows.Add(row(fmt.Sprintf("after%d", i)))
	}
	poll.Until(t, "the spool drains", func() bool { return rows.Spooled() == 0 })
	poll.Until(t, "the follower sees every row", func() bool { got, _ := sink.count(); return got >= 30 })

	nc := connect(t, srv.URL(), "reader")
	byID := map[string]int{}
	n, err := cluster.ReadRows(context.Background(), nc, func(r benchmarks.Row) { byID[r.RequestID]++ })
	if err != nil {
		t.Fatal(err)
	}
	if n != 30 || len(byID) != 30 {
		t.Errorf("the stream holds %d rows, %d distinct; want 30 of 30", n, len(byID))
	}
	for id, k := range byID {
		if k != 1 {
			t.Errorf("row %s stored %d times", id, k)
		}
	}
	if got, _ := sink.count(); got != 30 {
		t.Errorf("the follower counted %d rows, want 30", got)
	}
}

func TestSpooledRowsSurviveAReplicaRestart(t *testing.T) {
	srv := clustertest.Start(t)
	dir := t.TempDir()
	nc := connect(t, srv.URL(), "a")
	srv.Stop()
	r, err := cluster.OpenRows(nc, cluster.RowsOptions{Replica: "a", SpoolDir: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r.Add(row(fmt.Sprintf("r%d", i)))
	}
	r.Close()
	srv.Restart()
	r, err = cluster.OpenRows(connect(t, srv.URL(), "a2"), cluster.RowsOptions{Replica: "a", SpoolDir: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Spooled(); got != 5 && got != 0 {
		t.Errorf("spooled at start: %d, want 5 (or 0 once sent)", got)
	}
	poll.Until(t, "the spool drains", func() bool { return r.Spooled() == 0 })
	n, err := cluster.ReadRows(context.Background(), connect(t, srv.URL(), "reader"), func(benchmarks.Row) {})
	if err != nil || n != 5 {
		t.Errorf("the stream holds %d rows (%v), want 5", n, err)
	}
}

// TestUnreadableSpoolFileIsSetAside checks that one spooled file that cannot
// be read (here a folder under a row's name) neither stops the rows behind
// it nor keeps Close from returning: it is set aside as .bad.
func TestUnreadableSpoolFileIsSetAside(t *testing.T) {
	srv := clustertest.Start(t)
	dir := t.TempDir()
	nc := connect(t, srv.URL(), "a")
	srv.Stop()
	r, err := cluster.OpenRows(nc, cluster.RowsOptions{Replica: "a", SpoolDir: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r.Add(row(fmt.Sprintf("r%d", i)))
	}
	r.Close()
	bad := filepath.Join(dir, "00000000000000000000.json") // sorts before every row
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	r, err = cluster.OpenRows(connect(t, srv.URL(), "a2"), cluster.RowsOptions{Replica: "a", SpoolDir: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the spool drains past the unreadable file", func() bool { return r.Spooled() == 0 })
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
	if _, err := os.Stat(bad + ".bad"); err != nil {
		t.Errorf("the unreadable file was not set aside: %v", err)
	}
	n, err := cluster.ReadRows(context.Background(), connect(t, srv.URL(), "reader"), func(benchmarks.Row) {})
	if err != nil || n != 3 {
		t.Errorf("the stream holds %d rows (%v), want 3", n, err)
	}
}
