package cluster_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"adaptbot"
	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/failures"
	"adaptbot/poll"
)

// openFailureStore is one replica's failure store over the cluster's
// bucket, following the other replicas' writes.
func openFailureStore(t *testing.T, url, id string) *failures.Store {
	t.Helper()
	b, err := cluster.OpenFailures(context.Background(), connect(t, url, id), quiet)
	if err != nil {
		t.Fatal(err)
	}
	st, err := failures.Load(context.Background(), b, failures.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Follow(ctx, st) //nolint:errcheck
	}()
	t.Cleanup(func() { cancel(); <-done })
	return st
}

// TestFailureCasesAreSharedAndNoCountIsLost: two replicas record the same
// and different cases at the same moment and write them at once; each
// sees every case, with every failure counted once.
func TestFailureCasesAreSharedAndNoCountIsLost(t *testing.T) {
	srv := clustertest.Start(t)
	a := openFailureStore(t, srv.URL(), "a")
	b := openFailureStore(t, srv.URL(), "b")
	same := json.RawMessage(`{"text":""}`)
	var wg sync.WaitGroup
	for _, st := range []*failures.Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				for range 10 {
					st.Record(failures.Call{Tool: "echo", Version: 1, Args: same, Kind: adaptbot.FailPanic, Message: "boom"})
				}
				if err := st.Flush(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	b.Record(failures.Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{"text":"b only"}`), Kind: adaptbot.FailError})
	b.AddRepair("echo", failures.Repair{From: 1})
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*failures.Store{"a": a, "b": b} {
		poll.Until(t, name+" sees every case, each failure once", func() bool {
			s := st.Get("echo")
			return len(s.Cases) == 2 && s.Cases[1].Count+s.Cases[0].Count == 61 && len(s.Repairs) == 1
		})
	}
	// A replica that starts later loads them.
	c := openFailureStore(t, srv.URL(), "c")
	if s := c.Get("echo"); len(s.Cases) != 2 {
		t.Errorf("a new replica loaded %+v", s)
	}
}
