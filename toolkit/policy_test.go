package toolkit_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"adaptbot/toolkit"
)

func TestPolicyCheck(t *testing.T) {
	mustPolicy := func(list string) toolkit.Policy {
		p, err := toolkit.ParsePolicy(list)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		policy  toolkit.Policy
		host    string
		ip      string
		blocked bool
	}{
		{"loopback", toolkit.Policy{}, "127.0.0.1", "127.0.0.1", true},
		{"loopback range", toolkit.Policy{}, "127.0.0.2", "127.0.0.2", true},
		{"private 10/8", toolkit.Policy{}, "10.0.0.1", "10.0.0.1", true},
		{"private 172.16/12", toolkit.Policy{}, "172.16.0.1", "172.16.0.1", true},
		{"private 192.168/16", toolkit.Policy{}, "192.168.1.1", "192.168.1.1", true},
		{"cloud metadata", toolkit.Policy{}, "169.254.169.254", "169.254.169.254", true},
		{"metadata by name", toolkit.Policy{}, "metadata.google.internal", "169.254.169.254", true},
		{"IPv6 loopback", toolkit.Policy{}, "::1", "::1", true},
		{"IPv4-mapped loopback", toolkit.Policy{}, "::ffff:127.0.0.1", "::ffff:127.0.0.1", true},
		{"IPv4-mapped private", toolkit.Policy{}, "::ffff:10.0.0.1", "::ffff:10.0.0.1", true},
		{"IPv4-mapped metadata", toolkit.Policy{}, "::ffff:169.254.169.254", "::ffff:169.254.169.254", true},
		{"IPv6 unique local", toolkit.Policy{}, "fd00::1", "fd00::1", true},
		{"IPv6 link-local", toolkit.Policy{}, "fe80::1", "fe80::1", true},
		{"NAT64 of private", toolkit.Policy{}, "64:ff9b::a00:1", "64:ff9b::a00:1", true},
		{"carrier-grade NAT", toolkit.Policy{}, "100.64.0.1", "100.64.0.1", true},
		{"unspecified", toolkit.Policy{}, "0.0.0.0", "0.0.0.0", true},
		{"multicast", toolkit.Policy{}, "224.0.0.1", "224.0.0.1", true},
		{"public IPv4", toolkit.Policy{}, "example.com", "93.184.215.14", false},
		{"public IPv6", toolkit.Policy{}, "example.com", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", false},

		{"allowlisted CIDR", mustPolicy("10.0.0.0/8"), "10.1.2.3", "10.1.2.3", false},
		{"outside the CIDR", mustPolicy("10.0.0.0/8"), "192.168.0.1", "192.168.0.1", true},
		{"allowlisted CIDR, mapped", mustPolicy("10.0.0.0/8"), "::ffff:10.1.2.3", "::ffff:10.1.2.3", false},
		{"allowlisted address", mustPolicy("127.0.0.1"), "127.0.0.1", "127.0.0.1", false},
		{"next to the address", mustPolicy("127.0.0.1"), "127.0.0.2", "127.0.0.2", true},
		{"allowlisted IPv6", mustPolicy("[::1]"), "::1", "::1", false},
		{"allowlisted host", mustPolicy("api.internal"), "api.internal", "10.0.0.5", false},
		{"allowlisted host, any case", mustPolicy("API.internal"), "api.INTERNAL.", "10.0.0.5", false},
		{"other host, same address", mustPolicy("api.internal"), "db.internal", "10.0.0.5", true},
		{"subdomain rule", mustPolicy(".corp.example"), "a.corp.example", "10.0.0.6", false},
		{"subdomain rule, apex", mustPolicy(".corp.example"), "corp.example", "10.0.0.6", true},
		{"subdomain rule, lookalike", mustPolicy(".corp.example"), "evilcorp.example", "10.0.0.6", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Check(tt.host, netip.MustParseAddr(tt.ip))
			if blocked := errors.Is(err, toolkit.ErrBlocked); blocked != tt.blocked {
				t.Errorf("Check(%s, %s) = %v, want blocked=%v", tt.host, tt.ip, err, tt.blocked)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := toolkit.ParsePolicy(" api.internal, 10.0.0.0/8 ,[::1], 127.0.0.1,, .corp.example")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"api.internal", ".corp.example"}; !slices.Equal(p.AllowHosts, want) {
		t.Errorf("hosts %v, want %v", p.AllowHosts, want)
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("127.0.0.1/32"),
	}
	if !slices.Equal(p.AllowNets, want) {
		t.Errorf("nets %v, want %v", p.AllowNets, want)
	}
	for _, bad := range []string{"http://example.com", "10.0.0.0/33", "host:80"} {
		if _, err := toolkit.ParsePolicy(bad); err == nil {
			t.Errorf("ParsePolicy(%q) accepted it", bad)
		}
	}
	if p, err := toolkit.ParsePolicy(""); err != nil || len(p.AllowHosts)+len(p.AllowNets) != 0 {
		t.Errorf("empty list: %+v, %v", p, err)
	}
}
