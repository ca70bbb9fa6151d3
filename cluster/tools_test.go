package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"adaptbot"
	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/poll"
	"adaptbot/registry"
)

// replica is one replica's registry over its own folder, mirrored to the
// cluster.
type replica struct {
	reg    *registry.Registry
	mirror *cluster.Mirror
}

func openReplica(t *testing.T, url, id string, tools map[string]string) *replica {
	t.Helper()
	dir := t.TempDir()
	for name, src := range tools {
		if err := os.MkdirAll(filepath.Join(dir, "tools", name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tools", name, name+".go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "tools_registry.json"), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	m, err := cluster.OpenMirror(context.Background(), connect(t, url, id), reg, cluster.MirrorOptions{Replica: id, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx, ready) //nolint:errcheck
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("the mirror did not catch up with the cluster")
	}
	return &replica{reg: reg, mirror: m}
}

func namedEcho(name string) string {
	return strings.ReplaceAll(echoTool, "package echo", "package "+name)
}

func TestTwoReplicasServeOneSetOfTools(t *testing.T) {
	srv := clustertest.Start(t)
	a := openReplica(t, srv.URL(), "a", map[string]string{"echo": echoTool})
	b := openReplica(t, srv.URL(), "b", nil)

	// B joined a seeded cluster: it serves A's tool.
	if got, ok := b.reg.Tool("echo"); !ok || string(got.Code) != echoTool {
		t.Fatalf("B does not serve the cluster's echo (ok %v)", ok)
	}

	// A change accepted on A is served by B.
	shout := namedEcho("shout")
	if _, err := a.reg.Put(context.Background(), "shout", []byte(shout), registry.PutOptions{Origin: adaptbot.OriginGenerated}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "B serves the tool put on A", func() bool {
		got, ok := b.reg.Tool("shout")
		return ok && string(got.Code) == shout && got.Origin == adaptbot.OriginGenerated
	})
	// A new version too, with its note (what a repair says it fixed).
	shout2 := strings.ReplaceAll(shout, "return in.Text, nil", `return in.Text + "!", nil`)
	if _, err := a.reg.Put(context.Background(), "shout", []byte(shout2), registry.PutOptions{Note: "Repair of 1 failure case: 1 result."}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "B serves A's new version", func() bool {
		got, ok := b.reg.Tool("shout")
		return ok && string(got.Code) == shout2
	})
	if vs, _ := b.reg.Versions("shout"); len(vs) == 0 || vs[len(vs)-1].Note != "Repair of 1 failure case: 1 result." {
		t.Errorf("B's history of the version made on A lacks its note: %+v", vs)
	}

	// A delete on B is gone from A.
	if _, err := b.reg.Delete(context.Background(), "echo"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the tool deleted on B is gone from A", func() bool {
		_, ok := a.reg.Tool("echo")
		return !ok
	})

	// A third replica that starts with a tool of its own follows the
	// cluster: it drops what the cluster does not hold.
	c := openReplica(t, srv.URL(), "c", map[string]string{"stray": namedEcho("stray")})
	if _, ok := c.reg.Tool("stray"); ok {
		t.Error("a replica joining a cluster kept a tool the cluster does not hold")
	}
	if _, ok := c.reg.Tool("shout"); !ok {
		t.Error("a replica joining a cluster does not serve its tools")
	}
	if _, ok := a.reg.Tool("stray"); ok {
		t.Error("a joining replica's stray tool reached the cluster")
	}
}

// A replica that changes a tool several times in quick succession keeps
// serving its newest version: its watch, bringing back its own earlier
// changes, must not make them serve again (nor add them to its history).
func TestQuickChangesOnAReplicaDoNotComeBack(t *testing.T) {
	srv := clustertest.Start(t)
	a := openReplica(t, srv.URL(), "a", nil)
	b := openReplica(t, srv.URL(), "b", nil)
	const changes = 10
	var mu sync.Mutex
	var served []string // the sources A served, in order
	a.reg.OnChange(func(ev registry.Event) {
		if got, ok := a.reg.Tool("shout"); ok {
			mu.Lock()
			served = append(served, string(got.Code))
			mu.Unlock()
		}
	})
	var last string
	for i := range changes {
		last = strings.ReplaceAll(namedEcho("shout"), "return in.Text, nil", "return in.Text + \""+strings.Repeat("!", i)+"\", nil")
		if _, err := a.reg.Put(context.Background(), "shout", []byte(last), registry.PutOptions{Origin: adaptbot.OriginGenerated}); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "B serves A's last change", func() bool {
		got, ok := b.reg.Tool("shout")
		return ok && string(got.Code) == last
	})
	// Wait until A's watch has brought back A's last change too.
	js, err := jetstream.New(connect(t, srv.URL(), "look"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), cluster.ToolBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), "shout")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "A's watch has handled A's last change", func() bool { return a.mirror.Done() >= e.Revision() })
	if vs, _ := a.reg.Versions("shout"); len(vs) != changes {
		t.Errorf("A's history holds %d versions after %d changes", len(vs), changes)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(served) != changes {
		t.Errorf("A served %d versions in turn after %d changes; its earlier ones came back", len(served), changes)
	}
}

func TestTenConcurrentLocksOfOneNameHaveOneWinner(t *testing.T) {
	srv := clustertest.Start(t)
	js, err := jetstream.New(connect(t, srv.URL(), "locks"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: cluster.LockBucket})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []func()
		locked  int
	)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := cluster.Lock(context.Background(), kv, "weather", "replica-"+string(rune('a'+i)), time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, release)
			case errors.Is(err, cluster.ErrLocked):
				locked++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 || locked != 9 {
		t.Fatalf("%d winners and %d refused, want 1 and 9", len(winners), locked)
	}
	winners[0]()
	release, err := cluster.Lock(context.Background(), kv, "weather", "later", time.Minute)
	if err != nil {
		t.Fatalf("the lock is not free after its release: %v", err)
	}
	release()
	// A lock its holder left behind expires.
	if _, err := cluster.Lock(context.Background(), kv, "stale", "crashed", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := cluster.Lock(context.Background(), kv, "stale", "next", time.Minute); err != nil {
		t.Errorf("an expired lock was not taken over: %v", err)
	}
}

func TestAChangeWhileNATSIsAwayReachesTheClusterWhenItReturns(t *testing.T) {
	srv := clustertest.Start(t)
	a := openReplica(t, srv.URL(), "a", map[string]string{"echo": echoTool})
	b := openReplica(t, srv.URL(), "b", nil)
	srv.Stop()
	late := namedEcho("late")
	if _, err := a.reg.Put(context.Background(), "late", []byte(late), registry.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	poll.Until(t, "B serves the tool A accepted while NATS was away", func() bool {
		got, ok := b.reg.Tool("late")
		return ok && string(got.Code) == late
	})
}

// TestARestartedReplicaFreesItsLocks: a replica killed while it held a
// tool's lock (mid-build) frees it when it starts again under its name,
// instead of blocking the tool until the lock expires.
func TestARestartedReplicaFreesItsLocks(t *testing.T) {
	srv := clustertest.Start(t)
	a := openReplica(t, srv.URL(), "a", map[string]string{"echo": echoTool})
	if _, err := a.mirror.Lock(context.Background(), "echo", time.Hour); err != nil {
		t.Fatal(err)
	}
	// The crash: the lock is never released. Another replica is refused.
	b := openReplica(t, srv.URL(), "b", nil)
	if _, err := b.mirror.Lock(context.Background(), "echo", time.Hour); !errors.Is(err, cluster.ErrLocked) {
		t.Fatalf("b took the lock a holds: %v", err)
	}
	openReplica(t, srv.URL(), "a", nil) // a again, restarted
	release, err := b.mirror.Lock(context.Background(), "echo", time.Hour)
	if err != nil {
		t.Fatalf("the lock of a's crashed run still holds: %v", err)
	}
	release()
}
