package toolkit

import (
	"fmt"
	"net/netip"
	"strings"
)

// Policy decides which addresses a tool may connect to. By default every
// public address is allowed and every non-public one is refused: loopback,
// private ranges, link-local (which holds cloud metadata at 169.254.169.254),
// carrier-grade NAT, unspecified and multicast. Allow lists exceptions.
type Policy struct {
	// AllowHosts are host names that may be reached whatever they resolve to;
	// an entry starting with "." matches every subdomain.
	AllowHosts []string
	// AllowNets are address ranges that may be reached even if not public.
	AllowNets []netip.Prefix
}

// ParsePolicy reads a comma-separated list of host names and CIDRs (or single
// addresses), the form of ADAPTBOT_EGRESS_ALLOW.
func ParsePolicy(list string) (Policy, error) {
	var p Policy
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(item); err == nil {
			p.AllowNets = append(p.AllowNets, pfx.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(strings.Trim(item, "[]")); err == nil {
			p.AllowNets = append(p.AllowNets, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		if strings.ContainsAny(item, "/:") {
			return Policy{}, fmt.Errorf("egress allowlist entry %q is neither a host name nor a CIDR", item)
		}
		p.AllowHosts = append(p.AllowHosts, strings.ToLower(item))
	}
	return p, nil
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach IPv4 private space
}

// Names reports whether host is one the allowlist names (AllowHosts), as
// opposed to one it admits for its address alone: the hosts a secret may
// reach over plain HTTP.
func (p Policy) Names(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range p.AllowHosts {
		if host == h || (strings.HasPrefix(h, ".") && strings.HasSuffix(host, h)) {
			return true
		}
	}
	return false
}

// Check returns an error wrapping ErrBlocked if host at ip may not be reached.
func (p Policy) Check(host string, ip netip.Addr) error {
	ip = ip.Unmap()
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if p.Names(host) {
		return nil
	}
	for _, n := range p.AllowNets {
		if n.Contains(ip) {
			return nil
		}
	}
	if reason := nonPublicReason(ip); reason != "" {
		return fmt.Errorf("%s (%s) is a %s address: %w; set ADAPTBOT_EGRESS_ALLOW to permit it", host, ip, reason, ErrBlocked)
	}
	return nil
}

func nonPublicReason(ip netip.Addr) string {
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, n := range nonPublic {
		if n.Contains(ip) {
			return "reserved"
		}
	}
	return ""
}
