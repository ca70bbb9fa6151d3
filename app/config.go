package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"adaptbot/auth"
	"adaptbot/cluster"
	"adaptbot/failures"
	"adaptbot/homelock"
	"adaptbot/llm/provider"
	"adaptbot/sandbox"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/toolkit"
)

// Config is everything AdaptBot reads from its environment, read once, in
// loadConfig, from the settings table.
type Config struct {
	// Home is the folder every relative path below resolves against
	// (ADAPTBOT_HOME); empty is the current directory.
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
	CallTimeout time.Duration
	Egress      toolkit.Policy
	Landlock    sandbox.Landlock

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
	NATSURL   string
	NATSCreds string
	ReplicaID string
	// Fleet says tool calls go to the worker fleet: NATS is set and
	// ADAPTBOT_WORKERS=0.
	Fleet bool
	// Workspace.
	Review bool   // ADAPTBOT_REVIEW: new and changed tools wait for approval
	Traces string // ADAPTBOT_TRACES: the store of recent requests; "" is off

	// Learning from use (app/learning.go).
	FailuresKeep int                // ADAPTBOT_FAILURES_KEEP: failure cases kept per tool
	AutoRepair   service.AutoRepair // ADAPTBOT_AUTO_REPAIR: off, propose or on
	RepairAfter  int                // ADAPTBOT_REPAIR_AFTER: distinct cases that start one
	RepairEvery  time.Duration      // ADAPTBOT_REPAIR_EVERY: the least time between two of a tool

	// The edge's limits and cross-site rules (app/limits.go, app/guard.go).
	Edge EdgeConfig
	// Identity is how callers prove who they are (app/auth.go).
	Identity IdentityConfig

	// Telemetry says whether and where spans go (OTEL_*,
	// ADAPTBOT_OTEL_CONTENT); MetricsToken opens /metrics beyond loopback.
	Telemetry    telemetry.Config
	MetricsToken string

	// values and from are each setting's value in effect and where it came
	// from ("default" or "environment"), for `adaptbot config`.
	values, from map[string]string
	// hooks are set by tests only.
	hooks hooks
	// lock is the server's hold on its folder (homelock), nil in every
	// other command. serve records the address it listens on in it.
	lock *homelock.Lock
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
}

// hooks are what tests replace in the wiring: the sandbox worker command
// (the test binary serves as the worker), host rewrites for the toolkit,
// and a look at the command line's flags.
// The binary leaves them zero.
type hooks struct {
	workerCommand []string
	workerEnv     []string
	toolkitHosts  map[string]string
	// flags sees each command's flag set and usage before it parses, so a
	// test can check that the usage and the README name every flag.
	flags func(fs *flag.FlagSet, usage string)
}

// setting is one environment variable: its name, its default as it would be
// written in the environment ("" is empty), its help text (for `adaptbot
// config` and the README's table), and parse, which stores the value in
// effect in a Config or says what is wrong with it. A setting with a nil
// parse is listed and its value is kept for Config.value. secret settings
// are shown as set or unset, never their value.
type setting struct {
	name, def, help string
	parse           func(c *Config, v string) error
	secret          bool
}

// settings is the one table of configuration variables.
var settings = []setting{
	{"ADAPTBOT_HOME", "", "the folder every relative path below (tools, registry, CSV, MCP servers file) resolves against; empty is the current directory",
		func(c *Config, v string) error { c.Home = v; return nil }, false},
	{"ADAPTBOT_ADDR", "127.0.0.1:3000", "the address the server listens on and the CLI sends changes to",
		func(c *Config, v string) error {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return errors.New("want host:port, e.g. 127.0.0.1:3000")
			}
			c.Addr = v
			return nil
		}, false},
	{"ADAPTBOT_TOOLS_DIR", "tools", "tool sources", func(c *Config, v string) error { c.ToolsDir = v; return nil }, false},
	{"ADAPTBOT_REGISTRY", "tools_registry.json", "registry file", func(c *Config, v string) error { c.Registry = v; return nil }, false},
	{"ADAPTBOT_HISTORY_KEEP", "20", "versions of each tool kept in tools/.history for rollback; older ones are pruned",
		func(c *Config, v string) (err error) {
			c.HistoryKeep, err = wholeNumber(v)
			c.HistoryKeep = max(c.HistoryKeep, 1) // the serving version is always kept
			return err
		}, false},
	{"ADAPTBOT_BENCHMARKS", "benchmarks/benchmarks.csv", "benchmark CSV", func(c *Config, v string) error { c.Benchmarks = v; return nil }, false},
	{"ADAPTBOT_MCP_CONFIG", "mcp_servers.json", "external MCP servers", func(c *Config, v string) error { c.MCPConfig = v; return nil }, false},
	{"ADAPTBOT_LLM_PROVIDER", "", "openai, ollama, anthropic or googleai; empty picks from the keys present",
		func(c *Config, v string) (err error) {
			c.LLM.Provider, err = oneOf(v, "", "openai", "ollama", "anthropic", "googleai")
			return err
		}, false},
	{"ADAPTBOT_MODEL", "", "model name; empty means the provider's usual default", func(c *Config, v string) error { c.LLM.Model = v; return nil }, false},
	{"ADAPTBOT_MODEL_TIMEOUT", "60s", "limit of one model call (one try); the chat deadline is derived from it",
		func(c *Config, v string) (err error) { c.LLM.Timeout, err = duration(v); return err }, false},
	{"ADAPTBOT_MODEL_RETRIES", "2", "retries of a model call after a 429, a 5xx, a connection error or a timeout before any output",
		func(c *Config, v string) (err error) { c.LLM.Retries, err = wholeNumber(v); return err }, false},
	{"ADAPTBOT_EMBEDDING_MODEL", "", "embedding model of the provider; when set, tool routing fuses dense scores with the lexical ones",
		func(c *Config, v string) error { c.LLM.EmbeddingModel = v; return nil }, false},
	{"OPENAI_API_KEY", "", "OpenAI, or any OpenAI-compatible server", func(c *Config, v string) error { c.LLM.OpenAIKey = v; return nil }, true},
	{"OPENAI_BASE_URL", "", "an OpenAI-compatible server (Groq, vLLM, llama.cpp, LM Studio, OpenRouter)", func(c *Config, v string) error { c.LLM.OpenAIBaseURL = v; return nil }, false},
	{"OLLAMA_HOST", "", "Ollama, e.g. localhost:11434", func(c *Config, v string) error { c.LLM.OllamaHost = v; return nil }, false},
	{"ANTHROPIC_API_KEY", "", "Anthropic", func(c *Config, v string) error { c.LLM.AnthropicKey = v; return nil }, true},
	{"GOOGLE_API_KEY", "", "Google (Gemini)", func(c *Config, v string) error { c.LLM.GoogleKey = v; return nil }, true},
	{"ADAPTBOT_ADMIN_TOKEN", "", "a key with the admin role (Authorization: Bearer), beside the users' own; the CLI sends it when ADAPTBOT_KEY is unset",
		func(c *Config, v string) error { c.AdminToken = v; return nil }, true},
	{"ADAPTBOT_USERS", "users.json", "the users: names, roles and hashes of their API keys, never the keys (adaptbot users add NAME --role ROLE); the server secret that keys the hashes, pseudonyms and session cookies is adaptbot.secret beside it, made at first start; both 0600. With ADAPTBOT_NATS_URL both live in the KV bucket adaptbot_users instead",
		func(c *Config, v string) error { c.Identity.Users = v; return nil }, false},
	{"ADAPTBOT_KEY", "", "your own API key, which CLI commands that go through the server send (Authorization: Bearer); empty sends ADAPTBOT_ADMIN_TOKEN",
		func(c *Config, v string) error { c.Identity.Key = v; return nil }, true},
	{"ADAPTBOT_OIDC_ISSUER", "", "an OpenID Connect provider's issuer URL: people sign in with it in the browser (with ADAPTBOT_OIDC_CLIENT_ID and ADAPTBOT_OIDC_CLIENT_SECRET; register SERVER/login/callback as the redirect URI)",
		func(c *Config, v string) error { c.Identity.OIDCIssuer = v; return nil }, false},
	{"ADAPTBOT_OIDC_CLIENT_ID", "", "this server's client ID at the OIDC provider", func(c *Config, v string) error { c.Identity.OIDCClientID = v; return nil }, false},
	{"ADAPTBOT_OIDC_CLIENT_SECRET", "", "this server's client secret at the OIDC provider", func(c *Config, v string) error { c.Identity.OIDCClientSecret = v; return nil }, true},
	{"ADAPTBOT_OIDC_ROLES_CLAIM", "", "the ID token claim that gives roles: CLAIM (its values user, builder, admin are roles) or CLAIM:VALUE=ROLE,VALUE=ROLE (e.g. groups:ab-admins=admin,ab-devs=builder; a dotted path reaches a nested claim); with none, or no match, people sign in as user, and a user of the same name in ADAPTBOT_USERS gets their stored role",
		func(c *Config, v string) (err error) { c.Identity.OIDCRoles, err = auth.ParseRolesClaim(v); return err }, false},
	{"ADAPTBOT_OIDC_REDIRECT_URL", "", "the callback URL registered with the OIDC provider; empty is https://HOST/login/callback for the Host the browser used (http on loopback)",
		func(c *Config, v string) error { c.Identity.OIDCRedirect = v; return nil }, false},
	{"ADAPTBOT_TRUSTED_HEADER", "", "a header naming the user, set by an auth proxy in front (oauth2-proxy, Authelia), e.g. X-Forwarded-User; honoured only from ADAPTBOT_TRUSTED_PROXIES and ignored from anywhere else",
		func(c *Config, v string) error { c.Identity.TrustedHeader = v; return nil }, false},
	{"ADAPTBOT_TRUSTED_PROXIES", "", "addresses or CIDRs of the auth proxies whose ADAPTBOT_TRUSTED_HEADER counts (comma-separated)",
		func(c *Config, v string) (err error) {
			c.Identity.TrustedProxies, err = auth.ParseProxies(v)
			return err
		}, false},
	{"ADAPTBOT_SESSION_TTL", "12h", "how long a browser sign-in lasts",
		func(c *Config, v string) (err error) { c.Identity.SessionTTL, err = duration(v); return err }, false},
	{"ADAPTBOT_SANDBOX", "workers", "workers (tools run in supervised worker processes) or inprocess (development only)",
		func(c *Config, v string) error {
			v, err := oneOf(v, "workers", "inprocess", "in-process")
			c.InProcess = v == "inprocess" || v == "in-process"
			return err
		}, false},
	{"ADAPTBOT_WORKERS", "", "size of the worker pool; empty is the number of CPUs",
		func(c *Config, v string) (err error) {
			c.Workers = runtime.NumCPU()
			if v != "" {
				c.Workers, err = wholeNumber(v)
			}
			// 0 with NATS: no local workers, the fleet runs every call.
			c.Fleet = v != "" && err == nil && c.Workers == 0
			c.Workers = max(c.Workers, 1)
			return err
		}, false},
	{"ADAPTBOT_SANDBOX_LANDLOCK", "auto", "auto (workers confine their file access with Landlock and deny dangerous system calls with seccomp where the kernel has them), require (refuse to start without both) or off",
		func(c *Config, v string) (err error) {
			if c.Landlock, err = sandbox.ParseLandlock(v); err != nil {
				return errors.New("use auto, require or off")
			}
			return nil
		}, false},
	{"ADAPTBOT_TOOL_TIMEOUT", "10s", "wall-clock limit of one tool call; a tool may declare a lower one",
		func(c *Config, v string) (err error) { c.CallTimeout, err = duration(v); return err }, false},
	{"ADAPTBOT_EGRESS_ALLOW", "", "hosts or CIDRs tools may reach even though they are private (comma-separated)",
		func(c *Config, v string) (err error) { c.Egress, err = toolkit.ParsePolicy(v); return err }, false},
	{"ADAPTBOT_LEARN", "on", "on (requests like one a tool served before, in this server or in the benchmarks CSV, route to that tool) or off (route on the tools' own text alone)",
		func(c *Config, v string) error { v, err := oneOf(v, "on", "off"); c.Learn = v == "on"; return err }, false},
	{"ADAPTBOT_DISCOVERY", "active", "active (shortlist plus requests for more tools) or passive (every tool in the prompt)",
		func(c *Config, v string) error {
			v, err := oneOf(v, "active", "passive")
			c.Passive = v == "passive"
			return err
		}, false},
	{"ADAPTBOT_SHORTLIST", "5", "tools the classifier sees at first",
		func(c *Config, v string) (err error) { c.Shortlist, err = wholeNumber(v); return err }, false},
	{"ADAPTBOT_MAX_DISCOVERY", "5", "requests for more tools per message",
		func(c *Config, v string) (err error) { c.MaxDiscovery, err = wholeNumber(v); return err }, false},
	{"ADAPTBOT_MAX_STEPS", "5", "rounds of tool calls per message (a task that needs two tools in turn takes two)",
		func(c *Config, v string) (err error) {
			c.MaxSteps, err = wholeNumber(v)
			c.MaxSteps = max(c.MaxSteps, 1)
			return err
		}, false},
	{"ADAPTBOT_MAX_CALL_DEPTH", "4", "how deep tools may call tools (toolkit.Call): a tool called from outside is at depth 0, a tool it calls at 1; a call deeper fails with an error that names the chain",
		func(c *Config, v string) (err error) {
			c.MaxCallDepth, err = wholeNumber(v)
			if err == nil && c.MaxCallDepth < 1 {
				err = errors.New("must be at least 1")
			}
			return err
		}, false},
	{"ADAPTBOT_BUILD_ATTEMPTS", "3", "attempts (first try plus repairs) per tool build",
		func(c *Config, v string) (err error) {
			c.BuildAttempts, err = wholeNumber(v)
			c.BuildAttempts = max(c.BuildAttempts, 1)
			return err
		}, false},
	{"ADAPTBOT_NATS_URL", "", "NATS servers with JetStream (nats://host:4222, comma-separated; a token may sit in the URL): every replica shares the tools, the registry and the benchmark rows through them; with ADAPTBOT_WORKERS=0 tool calls go to the worker fleet (adaptbot worker --nats URL); empty is one machine on files",
		func(c *Config, v string) error { c.NATSURL = v; return nil }, true},
	{"ADAPTBOT_NATS_CREDS", "", "NATS credentials file (user JWT and nkey seed)", func(c *Config, v string) error { c.NATSCreds = v; return nil }, false},
	{"ADAPTBOT_REPLICA_ID", "", "this replica's id in the cluster, on every benchmark row it publishes; empty is host name-pid",
		func(c *Config, v string) error { c.ReplicaID = v; return nil }, false},
	{"ADAPTBOT_REVIEW", "off", "on: a new or changed tool waits as pending, its previous version serving, until approved on its page, with POST /api/tools/NAME/approve or adaptbot tools approve NAME",
		func(c *Config, v string) error { v, err := oneOf(v, "on", "off"); c.Review = v == "on"; return err }, false},
	{"ADAPTBOT_TRACES", "", "recent requests' traces for GET /api/requests/ID (JSON lines, rotated at 8 MiB, one old file kept); empty is requests.jsonl beside the benchmark CSV, off turns it off",
		func(c *Config, v string) error { c.Traces = v; return nil }, false},
	{"ADAPTBOT_FAILURES_KEEP", "50", "failure cases kept per tool (1 to 200): every failed call of a tool, de-duplicated by version and arguments; the least recently seen go first",
		func(c *Config, v string) (err error) {
			c.FailuresKeep, err = positive(v)
			if err == nil && c.FailuresKeep > failures.MaxKeep {
				err = fmt.Errorf("want at most %d", failures.MaxKeep)
			}
			return err
		}, false},
	{"ADAPTBOT_AUTO_REPAIR", "propose", "off, propose (a tool that keeps failing gets a repaired version that waits for approval) or on (a repair that passes its examples and failure cases serves); needs a model",
		func(c *Config, v string) error {
			v, err := oneOf(v, "off", "propose", "on")
			c.AutoRepair = service.AutoRepair(v)
			return err
		}, false},
	{"ADAPTBOT_REPAIR_AFTER", "3", "distinct failure cases of a tool's serving version that start an automatic repair",
		func(c *Config, v string) (err error) { c.RepairAfter, err = positive(v); return err }, false},
	{"ADAPTBOT_REPAIR_EVERY", "1h", "least time between two automatic repairs of one tool; one that failed is not tried again until a new failure case arrives",
		func(c *Config, v string) (err error) { c.RepairEvery, err = duration(v); return err }, false},
	{"ADAPTBOT_MAX_MESSAGE", "32KiB", "longest chat message in bytes (a number, or with KiB or MiB); a longer one gets 413",
		func(c *Config, v string) (err error) { c.Edge.MaxMessage, err = parseSize(v); return err }, false},
	{"ADAPTBOT_MAX_INFLIGHT", "64", "chats and builds served at once; past it 503 with Retry-After",
		func(c *Config, v string) (err error) { c.Edge.MaxInflight, err = positive(v); return err }, false},
	{"ADAPTBOT_RATE_LIMIT", "60/min", "chats and builds per person (per client address for callers not signed in) (N/s, N/min or N/hour, or off); past it 429 with Retry-After",
		func(c *Config, v string) (err error) { c.Edge.Rate, c.Edge.Per, err = parseRate(v); return err }, false},
	{"ADAPTBOT_ALLOWED_ORIGINS", "", "other origins (scheme://host:port) whose pages may call the API (comma-separated); others get 403",
		func(c *Config, v string) error { c.Edge.AllowedOrigins = origins(v); return nil }, false},
	{"ADAPTBOT_ALLOWED_HOSTS", "", "host names the server answers to besides loopback and the listen host (comma-separated); others get 421",
		func(c *Config, v string) error { c.Edge.AllowedHosts = hosts(v); return nil }, false},
	// Traces and metrics. The OTEL_* variables are read by telemetry.LoadConfig
	// after the loop, from the values in effect here, and from nowhere else.
	{telemetry.EnvEndpoint, "", "OpenTelemetry collector or backend (Jaeger, Phoenix, Langfuse, Grafana) to send traces to over OTLP/HTTP, e.g. http://localhost:4318 (/v1/traces is added); empty is tracing off", nil, false},
	{telemetry.EnvTracesEndpoint, "", "the full URL traces are posted to, used as is; wins over OTEL_EXPORTER_OTLP_ENDPOINT", nil, false},
	{telemetry.EnvHeaders, "", "headers sent with each export, key=value pairs separated by commas, values percent-encoded (Authorization=Basic%20...)", nil, true},
	{telemetry.EnvProtocol, "http/protobuf", "the OTLP protocol; only http/protobuf is supported", nil, false},
	{telemetry.EnvServiceName, telemetry.DefaultServiceName, "service.name of the spans", nil, false},
	{telemetry.EnvResourceAttributes, "", "more resource attributes of the spans, key=value pairs separated by commas (deployment.environment=prod)", nil, false},
	{telemetry.EnvSampler, telemetry.DefaultSampler, "which traces are kept: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", nil, false},
	{telemetry.EnvSamplerArg, "", "the ratio of a traceidratio sampler, 0 to 1 (1 when empty)", nil, false},
	{telemetry.EnvDisabled, "false", "true turns tracing off whatever the endpoint", nil, false},
	{telemetry.EnvContent, "off", "on: spans carry tool arguments and results, and the messages sent to and received from the model (personal data may be in them)", nil, false},
	{"ADAPTBOT_METRICS_TOKEN", "", "lets a scraper read GET /metrics beyond loopback (Authorization: Bearer <token>) without the admin token; on loopback /metrics is open",
		func(c *Config, v string) error { c.MetricsToken = v; return nil }, true},
}

// wholeNumber parses a number ≥ 0.
func wholeNumber(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errors.New("want a whole number ≥ 0")
	}
	return n, nil
}

// duration parses a duration > 0.
func duration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errors.New("want a duration such as 10s")
	}
	return d, nil
}

// oneOf returns v in lower case if it is one of choices.
func oneOf(v string, choices ...string) (string, error) {
	v = strings.ToLower(v)
	for _, c := range choices {
		if v == c {
			return v, nil
		}
	}
	var named []string
	for _, c := range choices {
		if c != "" {
			named = append(named, c)
		}
	}
	return v, fmt.Errorf("use %s", strings.Join(named, ", "))
}

// loadConfig reads the configuration from getenv, once: every setting of the
// table, then the paths resolved against ADAPTBOT_HOME. Every bad value is
// reported at once.
func loadConfig(getenv func(string) string) (Config, error) {
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

// writeConfig prints every setting: its value in effect (secrets as set or
// unset), where that came from, and its help text.
func writeConfig(w io.Writer, c Config) error {
	width := 0
	for _, s := range settings {
		width = max(width, len(s.name))
	}
	for _, s := range settings {
		v := c.value(s.name)
		switch {
		case s.secret && v == "":
			v = "(unset)"
		case s.secret:
			v = "(set)"
		case v == "":
			v = "(empty)"
		}
		if _, err := fmt.Fprintf(w, "%-*s  %-26s  %-11s  %s\n", width, s.name, v, c.from[s.name], s.help); err != nil {
			return err
		}
	}
	return nil
}

// markdownTable is the README's configuration table, made from settings.
func markdownTable() string {
	var b strings.Builder
	b.WriteString("| variable | meaning | default |\n|---|---|---|\n")
	for _, s := range settings {
		def := "empty"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.name, strings.ReplaceAll(s.help, "|", `\|`), def)
	}
	return b.String()
}

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

// serverURL is where the CLI finds the server: ADAPTBOT_ADDR, with an
// unspecified host (0.0.0.0, ::) reached on loopback.
func (c Config) serverURL() string {
	host, port, _ := net.SplitHostPort(c.Addr)
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// lockDir is the folder one server at a time may own: the registry's,
// which is ADAPTBOT_HOME or the working folder unless ADAPTBOT_REGISTRY
// names another. The tools, the history and the CSV sit beside it by
// default.
func (c Config) lockDir() string { return filepath.Dir(c.Registry) }

// checkHome refuses to serve from a folder that holds no tools when
// ADAPTBOT_HOME does not say where they are: an MCP client starts
// `adaptbot mcp` in a folder of its own, where it would serve nothing.
func checkHome(c Config) error {
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
