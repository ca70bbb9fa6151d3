package cluster_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/identity"
	"adaptbot/secrets"
)

// TestSecretsAreOneSetAcrossReplicas: a secret set on one replica serves
// on another, sealed in the users bucket; a deleted one is gone on both.
func TestSecretsAreOneSetAcrossReplicas(t *testing.T) {
	srv := clustertest.StartWith(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "replica", Password: "pw", Permissions: serverPerms(cluster.ReplicaPermissions())}}
	})
	url := userURL(srv, "replica")
	open := func(name string) *secrets.Store {
		b, err := cluster.OpenUsers(context.Background(), connect(t, url, name), cluster.UserSeed{}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		s, err := secrets.Open(b.Secrets(), []byte(strings.Repeat("s", 32)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open("a"), open("b")
	alice := identity.With(context.Background(), identity.Identity{Name: "alice", Role: identity.User, Pseudonym: "u-alice", Method: identity.Key})
	if _, err := a.Set(alice, "HOOK", "hook-value-123", []string{"hooks.example.org"}, false); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Resolve(alice, "HOOK"); err != nil || v.Secret != "hook-value-123" {
		t.Fatalf("on B: %+v, %v", v, err)
	}
	if list, err := b.List(alice); err != nil || len(list) != 1 || list[0].Name != "HOOK" {
		t.Fatalf("B's list: %+v, %v", list, err)
	}
	if _, err := b.Delete(alice, "HOOK", false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Resolve(alice, "HOOK"); err == nil {
		t.Error("deleted on B, still served on A")
	}
}
