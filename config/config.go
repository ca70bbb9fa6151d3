// Package config is AdaptBot's configuration: the one table of settings
// (each environment variable's name, default, help and parser), read once
// by Load from the getenv it is given, and what `adaptbot config` and the
// settings table in docs/configuration.md print from it.
//
// It reads the environment it is given and looks at the folder
// ADAPTBOT_HOME names; it opens, starts and writes nothing, and it holds
// no process state (the server's lock on its folder, the tests' hooks):
// those stay with the program that wires AdaptBot (app).
package config

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/auth"
	"adaptbot/cluster"
	"adaptbot/llm/provider"
	"adaptbot/native"
	"adaptbot/sandbox"
	"adaptbot/telemetry"
	"adaptbot/toolkit"
	"adaptbot/web"
)

// Config is everything AdaptBot reads from its environment, read once, by
// Load, from the settings table.
type Config struct {
	// Home is the folder every relative path below resolves against
	// (ADAPTBOT_HOME, or the working folder when that is empty), made
	// absolute by Load, as are the paths resolved against it.
	Home       string
	Addr       string
	ToolsDir   string
	Registry   string
	Benchmarks string
	MCPConfig  string
	AdminToken string

	LLM provider.Config

	// Sandbox.
	InProcess   bool
	Workers     int
	ToolTimeout time.Duration
	Egress      toolkit.Policy
	Landlock    sandbox.Landlock
	// Native is ADAPTBOT_NATIVE (native.ModeAuto or ModeOff), NativeBuilds
	// ADAPTBOT_NATIVE_BUILDS, and NativeGo the go command found for it
	// ("" when there is none, or the tier is off).
	Native       string
	NativeBuilds int
	NativeGo     string

	// Discovery.
	Learn        bool
	Passive      bool
	Shortlist    int
	MaxDiscovery int
	// MaxSteps caps the rounds of tool calls per chat message.
	MaxSteps int
	// MaxCallDepth caps how deep tools may call tools (toolkit.Call):
	// toolbox.Set.LimitCallDepth.
	MaxCallDepth int

	// Generator.
	BuildAttempts int

	// HistoryKeep is how many versions of each tool the registry keeps.
	HistoryKeep int

	// Cluster: an empty NATSURL means none (files and local workers).
	NATSURL     string
	NATSCreds   string
	NATSMonitor string
	ReplicaID   string
	// Fleet says tool calls go to the worker fleet: NATS is set and
	// ADAPTBOT_WORKERS=0.
	Fleet bool
	// Workspace.
	Review bool // ADAPTBOT_REVIEW: new and changed tools wait for approval
	// ApprovalTimeout is how long a tool's request that changes something
	// waits for the person's approval (ADAPTBOT_APPROVAL_TIMEOUT).
	ApprovalTimeout time.Duration
	Traces          string // ADAPTBOT_TRACES: the store of recent requests; "" is off

	// Learning from use (service/learning.go).
	FailuresKeep int           // ADAPTBOT_FAILURES_KEEP: failure cases kept per tool
	AutoRepair   adaptbot.Mode // ADAPTBOT_AUTO_REPAIR: off, propose or on
	RepairAfter  int           // ADAPTBOT_REPAIR_AFTER: distinct cases that start one
	Skills       adaptbot.Mode // ADAPTBOT_SKILLS: off, propose or on
	SkillAfter   int           // ADAPTBOT_SKILL_AFTER: recurrences that propose a skill
	RepairEvery  time.Duration // ADAPTBOT_REPAIR_EVERY: the least time between two of a tool

	// The edge's limits and cross-site rules (web/limits.go, web/guard.go).
	Edge web.Limits
	// Identity is how callers prove who they are (web/auth.go).
	Identity IdentityConfig

	// Telemetry says whether and where spans go (OTEL_*,
	// ADAPTBOT_OTEL_CONTENT); MetricsToken opens /metrics beyond loopback.
	Telemetry    telemetry.Config
	MetricsToken string

	// values and from are each setting's value in effect and where it came
	// from ("default" or "environment"), for `adaptbot config`.
	values, from map[string]string
}

// IdentityConfig is how callers prove who they are: the users file, OIDC,
// a trusted proxy's header, and the CLI's own key.
type IdentityConfig struct {
	// Users is the users file (ADAPTBOT_USERS); the server secret sits
	// beside it.
	Users string
	// Key is the key the CLI sends (ADAPTBOT_KEY).
	Key string
	// OIDC sign-in; Issuer "" is none.
	OIDCIssuer, OIDCClientID, OIDCClientSecret string
	OIDCRoles                                  *auth.RolesClaim
	OIDCRedirect                               string
	// TrustedHeader is honoured from TrustedProxies only.
	TrustedHeader  string
	TrustedProxies []netip.Prefix
	SessionTTL     time.Duration
	// BackoffMax is the longest a client address that keeps failing
	// credentials waits (ADAPTBOT_AUTH_BACKOFF_MAX).
	BackoffMax time.Duration
	// MCPSessionTimeout ends an /mcp session idle this long
	// (ADAPTBOT_MCP_SESSION_TIMEOUT).
	MCPSessionTimeout time.Duration
}

// Load reads the configuration from getenv, once: every setting of the
// table, then the paths resolved against ADAPTBOT_HOME. Every bad value is
// reported at once; the Config returned with the error holds the rest, for
// `adaptbot config`, which shows the settings even when some are bad.
func Load(getenv func(string) string) (Config, error) {
	c := Config{values: map[string]string{}, from: map[string]string{}}
	var problems []string
	for _, s := range settings {
		v, from := strings.TrimSpace(getenv(s.name)), "environment"
		if v == "" {
			v, from = s.def, "default"
		}
		c.values[s.name], c.from[s.name] = v, from
		if s.parse == nil {
			continue
		}
		if err := s.parse(&c, v); err != nil {
			problems = append(problems, fmt.Sprintf("%s=%q: %v", s.name, v, err))
		}
	}
	c.Fleet = c.Fleet && c.NATSURL != ""
	if c.Native == native.ModeAuto {
		c.NativeGo = native.Toolchain(getenv)
	}
	if c.ReplicaID == "" {
		c.ReplicaID = cluster.ReplicaID()
	}
	tel, err := telemetry.LoadConfig(c.value)
	if err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	c.Telemetry, c.Telemetry.Instance = tel, c.ReplicaID
	if c.Landlock == sandbox.LandlockRequire && c.InProcess {
		problems = append(problems, "ADAPTBOT_SANDBOX_LANDLOCK=require confines worker processes: it needs ADAPTBOT_SANDBOX=workers")
	}
	if c.Home != "" {
		if fi, err := os.Stat(c.Home); err != nil || !fi.IsDir() {
			problems = append(problems, fmt.Sprintf("ADAPTBOT_HOME=%q: not a folder", c.Home))
		}
	}
	// Every path is made absolute here, once: they leave the process (the
	// go command runs in a folder of its own, workers start in /, Landlock
	// and other programs read them), where a relative one means another
	// folder or nothing at all.
	if home, err := filepath.Abs(cmp.Or(c.Home, ".")); err != nil {
		problems = append(problems, fmt.Sprintf("ADAPTBOT_HOME=%q: %v", c.Home, err))
	} else {
		c.Home = home
	}
	if filepath.IsAbs(c.Home) {
		for _, p := range []*string{&c.ToolsDir, &c.Registry, &c.Benchmarks, &c.MCPConfig, &c.Traces, &c.Identity.Users} {
			if *p != "" && *p != "off" && !filepath.IsAbs(*p) {
				*p = filepath.Join(c.Home, *p)
			}
		}
	}
	problems = append(problems, c.Identity.check()...)
	switch c.Traces {
	case "":
		c.Traces = filepath.Join(filepath.Dir(c.Benchmarks), "requests.jsonl")
	case "off":
		c.Traces = ""
	}
	if len(problems) > 0 {
		return c, fmt.Errorf("bad configuration:\n  %s", strings.Join(problems, "\n  "))
	}
	return c, nil
}

// value is a setting's value in effect, as written.
func (c Config) value(name string) string { return c.values[name] }

// set reports whether the environment set name.
func (c Config) set(name string) bool { return c.from[name] == "environment" }

// Loopback reports whether the server listens on loopback only; builds are
// open then, and need ADAPTBOT_ADMIN_TOKEN otherwise.
func (c Config) Loopback() bool {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// ServerURL is where the CLI finds the server: ADAPTBOT_ADDR, with an
// unspecified host (0.0.0.0, ::) reached on loopback.
func (c Config) ServerURL() string {
	host, port, _ := net.SplitHostPort(c.Addr)
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// LockDir is the folder one server at a time may own: the registry's,
// which is ADAPTBOT_HOME or the working folder unless ADAPTBOT_REGISTRY
// names another. The tools, the history and the CSV sit beside it by
// default.
func (c Config) LockDir() string { return filepath.Dir(c.Registry) }

// CheckHome refuses to serve from a folder that holds no tools when
// ADAPTBOT_HOME does not say where they are: an MCP client starts
// `adaptbot mcp` in a folder of its own, where it would serve nothing.
func (c Config) CheckHome() error {
	if c.set("ADAPTBOT_HOME") {
		return nil
	}
	dirs, _ := os.ReadDir(c.ToolsDir)
	for _, d := range dirs {
		if d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			return nil
		}
	}
	abs, _ := filepath.Abs(c.ToolsDir)
	return fmt.Errorf("no tools in %s: run this in AdaptBot's folder, or set ADAPTBOT_HOME to it (MCP clients start servers in a folder of their own)", abs)
}

// check says what is missing from the identity settings: OIDC needs all
// three of issuer, client ID and secret, and a trusted header its proxies.
func (ic IdentityConfig) check() []string {
	var problems []string
	if ic.OIDCIssuer != "" || ic.OIDCClientID != "" || ic.OIDCClientSecret != "" {
		var missing []string
		for _, s := range []struct{ name, v string }{{"ADAPTBOT_OIDC_ISSUER", ic.OIDCIssuer}, {"ADAPTBOT_OIDC_CLIENT_ID", ic.OIDCClientID}, {"ADAPTBOT_OIDC_CLIENT_SECRET", ic.OIDCClientSecret}} {
			if s.v == "" {
				missing = append(missing, s.name)
			}
		}
		if len(missing) > 0 {
			problems = append(problems, "sign-in with OIDC also needs "+strings.Join(missing, " and "))
		}
	}
	if ic.OIDCIssuer == "" && (ic.OIDCRoles != nil || ic.OIDCRedirect != "") {
		problems = append(problems, "ADAPTBOT_OIDC_ROLES_CLAIM and ADAPTBOT_OIDC_REDIRECT_URL need ADAPTBOT_OIDC_ISSUER")
	}
	if ic.TrustedHeader != "" && len(ic.TrustedProxies) == 0 {
		problems = append(problems, "ADAPTBOT_TRUSTED_HEADER needs ADAPTBOT_TRUSTED_PROXIES: the addresses of the proxies that set it (from anywhere else it would let anyone be anyone)")
	}
	if ic.TrustedHeader == "" && len(ic.TrustedProxies) > 0 {
		problems = append(problems, "ADAPTBOT_TRUSTED_PROXIES is set but ADAPTBOT_TRUSTED_HEADER is not: name the header the proxies set")
	}
	return problems
}
