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

// TestCloseReturnsWhileNATSStalls checks that a replica's shutdown does
// not hang on rows whose acknowledgements never come: NATS has stopped
// answering (a stalled network, a paused server) while the connection
// still looks up. Each batch waits a bounded time for its acks, every one
// of them, and what is not acknowledged by then stays in the spool.
func TestCloseReturnsWhileNATSStalls(t *testing.T) {
	srv := clustertest.Start(t)
	proxy := clustertest.NewProxy(t, srv.Addr())
	dir := t.TempDir()
	r, err := cluster.OpenRows(connect(t, proxy.URL(), "a"), cluster.RowsOptions{Replica: "a", SpoolDir: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r.Add(row("first"))
	poll.Until(t, "the first row is published", func() bool { return r.Spooled() == 0 })

	proxy.Stall()
	for i := range 20 {
		r.Add(row(fmt.Sprintf("stalled%d", i)))
	}
	time.Sleep(200 * time.Millisecond) // the publisher sends them, and waits
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s while NATS stalled")
	}
	proxy.Heal()

	// Nothing is lost: what was not acknowledged is in the spool, and
	// the next run sends it, each row once.
	r, err = cluster.OpenRows(connect(t, srv.URL(), "a2"), cluster.RowsOptions{Replica: "a", SpoolDir: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	poll.Until(t, "the spool drains", func() bool { return r.Spooled() == 0 })
	byID := map[string]int{}
	if _, err := cluster.ReadRows(context.Background(), connect(t, srv.URL(), "reader"), func(r benchmarks.Row) { byID[r.RequestID]++ }); err != nil {
		t.Fatal(err)
	}
	if len(byID) != 21 {
		t.Errorf("the stream holds %d distinct rows, want 21", len(byID))
	}
	for id, n := range byID {
		if n != 1 {
			t.Errorf("row %s stored %d times", id, n)
		}
	}
}

// TestCommittedRowIsInTheStream checks that a row Commit returned for is in
// the stream at once: a request answered after it has its row.
func TestCommittedRowIsInTheStream(t *testing.T) {
	srv := clustertest.Start(t)
	r := openRows(t, srv.URL(), "a")
	reader := connect(t, srv.URL(), "reader")
	for i := range 5 {
		id := fmt.Sprintf("c%d", i)
		if err := r.Commit(row(id)); err != nil {
			t.Fatal(err)
		}
		found := 0
		if _, err := cluster.ReadRows(context.Background(), reader, func(r benchmarks.Row) {
			if r.RequestID == id {
				found++
			}
		}); err != nil {
			t.Fatal(err)
		}
		if found != 1 {
			t.Fatalf("row %s is in the stream %d times right after Commit, want 1", id, found)
		}
	}
}

// TestCommittedRowSurvivesACrash checks that a row Commit returned for
// while NATS is away is on disk, whole: a replica killed right after (its
// spool copied as the crash left it) still publishes it when it starts
// again.
func TestCommittedRowSurvivesACrash(t *testing.T) {
	srv := clustertest.Start(t)
	dir := t.TempDir()
	nc := connect(t, srv.URL(), "a")
	r, err := cluster.OpenRows(nc, cluster.RowsOptions{Replica: "a", SpoolDir: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv.Stop()
	began := time.Now()
	for i := range 3 {
		if err := r.Commit(row(fmt.Sprintf("k%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("three commits with NATS away took %v", took)
	}
	// The crash: what is on disk now is all a restarted replica has.
	after := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(after, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv.Restart()
	r2, err := cluster.OpenRows(connect(t, srv.URL(), "a2"), cluster.RowsOptions{Replica: "a", SpoolDir: after, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	poll.Until(t, "the restarted replica's spool drains", func() bool { return r2.Spooled() == 0 })
	byID := map[string]int{}
	if _, err := cluster.ReadRows(context.Background(), connect(t, srv.URL(), "reader"), func(r benchmarks.Row) { byID[r.RequestID]++ }); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if id := fmt.Sprintf("k%d", i); byID[id] != 1 {
			t.Errorf("row %s is in the stream %d times, want 1", id, byID[id])
		}
	}
}
