package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
)

// TestDurabilityWarnsOfLazyFsync: a server that fsyncs on a timer (NATS's
// default, every two minutes) is named, with the setting that stops the
// loss; one that fsyncs before it acknowledges is not.
func TestDurabilityWarnsOfLazyFsync(t *testing.T) {
	for _, always := range []bool{false, true} {
		srv := clustertest.StartWith(t, func(o *server.Options) {
			o.HTTPHost, o.HTTPPort = "127.0.0.1", -1
			o.SyncAlways = always
		})
		warnings := cluster.Durability(context.Background(), connect(t, srv.URL(), "a"), srv.MonitorURL())
		got := strings.Join(warnings, "\n")
		if lazy := strings.Contains(got, "sync_interval: always"); lazy == always {
			t.Errorf("sync always %v: warnings %q", always, warnings)
		}
	}
}

// TestDurabilityWarnsOfWhatCanLoseRows: a row stream in memory, or one
// that refuses rows when full, is named; a row stream whose de-duplication
// window is shorter than the spool's horizon is widened by the replica.
func TestDurabilityWarnsOfWhatCanLoseRows(t *testing.T) {
	srv := clustertest.Start(t)
	nc := connect(t, srv.URL(), "a")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cluster.RowStream, Subjects: []string{cluster.RowSubjectPrefix + ">"},
		Storage: jetstream.MemoryStorage, Discard: jetstream.DiscardNew, MaxMsgs: 1000, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cluster.Durability(ctx, nc, ""), "\n")
	for _, want := range []string{"kept in memory", "discard new", "de-duplicates over 1m0s"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %q lack %q", got, want)
		}
	}
	if err := cluster.EnsureRowStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, cluster.RowStream)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.CachedInfo().Config.Duplicates; d != 24*time.Hour {
		t.Errorf("the row stream de-duplicates over %v after a replica opened it, want 24h", d)
	}
}
