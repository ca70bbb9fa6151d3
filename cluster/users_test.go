package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/identity"
	"adaptbot/identity/users"
	"adaptbot/poll"
)

// openUserStore opens a replica's user store on the bucket and follows it.
func openUserStore(t *testing.T, url, name string, seed cluster.UserSeed) *users.Store {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b, err := cluster.OpenUsers(ctx, connect(t, url, name), seed, quiet)
	if err != nil {
		t.Fatal(err)
	}
	s, err := users.Open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Follow(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func TestUsersAreOneSetAcrossReplicas(t *testing.T) {
	srv := clustertest.StartWith(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "replica", Password: "pw", Permissions: serverPerms(cluster.ReplicaPermissions())},
			{Username: "worker", Password: "pw", Permissions: serverPerms(cluster.WorkerPermissions())},
		}
	})
	url := userURL(srv, "replica")
	ctx := context.Background()
	seedSecret := []byte(strings.Repeat("k", 32))
	seeded := users.User{Name: "old-timer", Role: identity.Builder, KeyHash: strings.Repeat("ab", 32)}
	a := openUserStore(t, url, "a", cluster.UserSeed{Secret: seedSecret, Users: []users.User{seeded}})
	b := openUserStore(t, url, "b", cluster.UserSeed{Secret: []byte(strings.Repeat("x", 32))}) // not empty any more: ignored

	if u, ok := b.Lookup("old-timer"); !ok || u.Role != identity.Builder {
		t.Fatalf("the seed's user on B: %+v, %v", u, ok)
	}
	if a.Pseudonym("alice") != b.Pseudonym("alice") {
		t.Fatal("two replicas give one person two pseudonyms: they do not share the secret")
	}

	_, key, err := a.Add(ctx, "alice", identity.Builder)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "A's new key works on B", func() bool { _, ok := b.Verify(key); return ok })
	if _, _, err := b.Add(ctx, "alice", identity.Admin); !errors.Is(err, users.ErrExists) {
		t.Errorf("a duplicate added on the other replica: %v", err)
	}
	_, key2, err := b.Rotate(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "B's rotation reaches A", func() bool {
		_, oldOK := a.Verify(key)
		_, newOK := a.Verify(key2)
		return !oldOK && newOK
	})
	if _, err := a.Remove(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "A's removal reaches B", func() bool { _, ok := b.Verify(key2); return !ok && b.Len() == 1 })
	if _, err := b.Remove(ctx, "alice"); !errors.Is(err, users.ErrNotFound) {
		t.Errorf("removing a removed user: %v", err)
	}

	// The admin token's sign-in, made on A, holds on B (a load balancer
	// may send the next request anywhere), and its sign-out on B ends it
	// on A.
	tok, err := a.StartSession(ctx, users.TokenName, users.SignInKey, identity.Admin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "A's admin-token session is on at B", func() bool { _, ok := b.CheckSession(users.TokenName, tok.ID); return ok })
	if _, err := b.EndSessions(ctx, users.TokenName, tok.ID); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "B's sign-out reaches A", func() bool { _, ok := a.CheckSession(users.TokenName, tok.ID); return !ok })
	if b.Len() != 1 || len(a.List()) != 1 {
		t.Errorf("a guest record is counted as a user: %d, %+v", b.Len(), a.List())
	}

	// A worker can neither read nor write the users.
	js, err := jetstream.New(connect(t, userURL(srv, "worker"), "w"))
	if err != nil {
		t.Fatal(err)
	}
	if kv, err := js.KeyValue(ctx, cluster.UserBucket); err == nil {
		if _, err := kv.Get(ctx, "secret"); err == nil {
			t.Error("a worker read the server secret")
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := js.Publish(pctx, "$KV."+cluster.UserBucket+".user.ZXZl", []byte(`{"name":"eve","role":"admin"}`)); err == nil {
		t.Error("a worker published into the user bucket")
	}
}
