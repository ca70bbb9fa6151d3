package cluster_test

import (
	"testing"

	"adaptbot/cluster"
)

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://s3cret@host:4222", "nats://redacted@host:4222"},
		{"nats://user:pw@a:4222,nats://b:4222", "nats://redacted@a:4222,nats://b:4222"},
	} {
		if got := cluster.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestToken(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"replica-a", "replica-a"},
		{"host.example.com-12", "host_example_com-12"},
		{"a b*c>", "a_b_c_"},
	} {
		if got := cluster.Token(tt.in); got != tt.want {
			t.Errorf("Token(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
