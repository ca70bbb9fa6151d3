package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/failures"
	"adaptbot/poll"
	"adaptbot/traces"
)

func serverPerms(p cluster.Permissions) *server.Permissions {
	sp := &server.Permissions{Subscribe: &server.SubjectPermission{Allow: p.Subscribe}}
	if len(p.Publish) > 0 {
		sp.Publish = &server.SubjectPermission{Allow: p.Publish}
	}
	if p.Responses {
		sp.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	}
	return sp
}

// userURL is the server's URL with a user and password in it.
func userURL(srv *clustertest.Server, user string) string {
	return fmt.Sprintf("nats://%s:pw@%s", user, srv.URL()[len("nats://"):])
}

func TestDocumentedPermissionsAreEnough(t *testing.T) {
	srv := clustertest.StartWith(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "replica", Password: "pw", Permissions: serverPerms(cluster.ReplicaPermissions())},
			{Username: "worker", Password: "pw", Permissions: serverPerms(cluster.WorkerPermissions())},
		}
	})
	replicaURL, workerURL := userURL(srv, "replica"), userURL(srv, "worker")

	// A worker serves the fleet; a replica calls it.
	startWorker(t, workerURL, "w", replicaURL)
	fleet := cluster.NewFleet(connect(t, replicaURL, "replica"), 5*time.Second)
	if res, err := fleet.Run(context.Background(), echoCall("hi")); err != nil || res.Output != "hi" {
		t.Fatalf("fleet call under the documented permissions: %q, %v", res.Output, err)
	}
	// A tool on the worker calls a tool through the replica.
	if out, err := newFleetHost(fleet).run("greeter", `{"name": "ada"}`); err != nil || out != "greeter: hello ada" {
		t.Errorf("a nested fleet call under the documented permissions: %q, %v", out, err)
	}

	// Replicas share rows and tools.
	a := openReplica(t, replicaURL, "a", map[string]string{"echo": echoTool})
	b := openReplica(t, replicaURL, "b", nil)
	if _, ok := b.reg.Tool("echo"); !ok {
		t.Error("B does not serve the cluster's tool under the documented permissions")
	}
	if _, err := b.mirror.Lock(context.Background(), "echo", time.Minute); err != nil {
		t.Errorf("lock under the documented permissions: %v", err)
	}
	if _, err := a.reg.Delete(context.Background(), "echo"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the delete reaches B", func() bool { _, ok := b.reg.Tool("echo"); return !ok })
	fa := openFailureStore(t, replicaURL, "a")
	fa.Record(failures.Call{Tool: "echo", Version: 1, Kind: adaptbot.FailPanic})
	if err := fa.Flush(context.Background()); err != nil {
		t.Errorf("failure cases under the documented permissions: %v", err)
	}
	tr := openTraces(t, replicaURL, "a", traces.Options{})
	if err := tr.Add(traces.Record{ID: "p1", Kind: traces.Chat}); err != nil {
		t.Errorf("a trace under the documented permissions: %v", err)
	}
	if _, err := openTraces(t, replicaURL, "b", traces.Options{}).Get("p1"); err != nil || len(tr.Recent(5)) != 1 {
		t.Errorf("traces read under the documented permissions: %v, %d recent", err, len(tr.Recent(5)))
	}
	rows := openRows(t, replicaURL, "a")
	sink := follow(t, replicaURL)
	rows.Add(row("r1"))
	poll.Until(t, "the row is read back", func() bool { n, _ := sink.count(); return n == 1 })
	if _, err := cluster.ReadRows(context.Background(), connect(t, replicaURL, "report"), func(benchmarks.Row) {}); err != nil {
		t.Errorf("report under the documented permissions: %v", err)
	}

	// A worker cannot write the registry, nor read it.
	js, err := jetstream.New(connect(t, workerURL, "w2"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if kv, err := js.KeyValue(ctx, cluster.ToolBucket); err == nil {
		if _, err := kv.Put(ctx, "echo", []byte(`{}`)); err == nil {
			t.Error("a worker wrote the tool bucket")
		}
	}
	if _, err := js.Publish(ctx, "$KV."+cluster.ToolBucket+".evil", []byte(`{}`)); err == nil {
		t.Error("a worker published into the tool bucket")
	}
	if _, err := js.Publish(ctx, "$KV."+cluster.FailureBucket+".echo", []byte(`{}`)); err == nil {
		t.Error("a worker published into the failure bucket")
	}
}
