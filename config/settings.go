package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/approval"
	"adaptbot/auth"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/llm"
	"adaptbot/native"
	"adaptbot/redact"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
	"adaptbot/toolkit"
	"adaptbot/web"
)

// setting is one environment variable: its name, its default as it would be
// written in the environment ("" is empty), its help text (for `adaptbot
// config` and docs/configuration.md's table), and parse, which stores the value in
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
	{"ADAPTBOT_HISTORY_KEEP", strconv.Itoa(registry.DefaultHistoryKeep), "versions of each tool kept in tools/.history for rollback; older ones are pruned",
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
	{"ADAPTBOT_MODEL_TIMEOUT", dur(llm.DefaultTimeout), "limit of one model call (one try); the chat deadline is derived from it",
		func(c *Config, v string) (err error) { c.LLM.Timeout, err = duration(v); return err }, false},
	{"ADAPTBOT_MODEL_RETRIES", strconv.Itoa(llm.DefaultRetries), "retries of a model call after a 429, a 5xx, a connection error or a timeout before any output",
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
	{"ADAPTBOT_SESSION_TTL", dur(auth.DefaultSessionTTL), "how long a browser sign-in lasts",
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
	{"ADAPTBOT_TOOL_TIMEOUT", dur(sandbox.DefaultCallTimeout), "wall-clock limit of one tool call; a tool may declare a lower one",
		func(c *Config, v string) (err error) { c.ToolTimeout, err = duration(v); return err }, false},
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
	{"ADAPTBOT_SHORTLIST", strconv.Itoa(agent.DefaultShortlist), "tools the classifier sees at first",
		func(c *Config, v string) (err error) { c.Shortlist, err = wholeNumber(v); return err }, false},
	{"ADAPTBOT_MAX_DISCOVERY", strconv.Itoa(agent.DefaultMaxDiscovery), "requests for more tools per message",
		func(c *Config, v string) (err error) { c.MaxDiscovery, err = wholeNumber(v); return err }, false},
	{"ADAPTBOT_MAX_STEPS", strconv.Itoa(agent.DefaultMaxSteps), "rounds of tool calls per message (a task that needs two tools in turn takes two)",
		func(c *Config, v string) (err error) {
			c.MaxSteps, err = wholeNumber(v)
			c.MaxSteps = max(c.MaxSteps, 1)
			return err
		}, false},
	{"ADAPTBOT_MAX_CALL_DEPTH", strconv.Itoa(toolbox.DefaultMaxCallDepth), "how deep tools may call tools (toolkit.Call): a tool called from outside is at depth 0, a tool it calls at 1; a call deeper fails with an error that names the chain",
		func(c *Config, v string) (err error) { c.MaxCallDepth, err = positive(v); return err }, false},
	{"ADAPTBOT_BUILD_ATTEMPTS", strconv.Itoa(generator.DefaultMaxAttempts), "attempts (first try plus repairs) per tool build",
		func(c *Config, v string) (err error) {
			c.BuildAttempts, err = wholeNumber(v)
			c.BuildAttempts = max(c.BuildAttempts, 1)
			return err
		}, false},
	{"ADAPTBOT_NATS_URL", "", "NATS servers with JetStream (nats://host:4222, comma-separated; a token may sit in the URL): every replica shares the tools, the registry and the benchmark rows through them; with ADAPTBOT_WORKERS=0 tool calls go to the worker fleet (adaptbot worker --nats URL); empty is one machine on files",
		func(c *Config, v string) error { c.NATSURL = v; return nil }, true},
	{"ADAPTBOT_NATS_CREDS", "", "NATS credentials file (user JWT and nkey seed)", func(c *Config, v string) error { c.NATSCreds = v; return nil }, false},
	{"ADAPTBOT_NATS_MONITOR", "", "a NATS server's monitoring address (http://host:8222): at start-up each replica reads its fsync policy there and warns when a power loss could lose acknowledged rows (docs/cluster.md); empty checks nothing",
		func(c *Config, v string) error { c.NATSMonitor = v; return nil }, false},
	{"ADAPTBOT_REPLICA_ID", "", "this replica's id in the cluster, on every benchmark row it publishes; empty is host name-pid",
		func(c *Config, v string) error { c.ReplicaID = v; return nil }, false},
	{"ADAPTBOT_REVIEW", "off", "on: a new or changed tool waits as pending, its previous version serving, until approved on its page, with POST /api/tools/NAME/approve or adaptbot tools approve NAME",
		func(c *Config, v string) error { v, err := oneOf(v, "on", "off"); c.Review = v == "on"; return err }, false},
	{"ADAPTBOT_APPROVAL_TIMEOUT", dur(approval.DefaultTimeout), "how long a tool's request that changes something (any method but GET or HEAD) waits for the approval of the person asking; with no answer by then it expires, nothing is sent, and the expiry is recorded apart from a denial",
		func(c *Config, v string) (err error) { c.ApprovalTimeout, err = duration(v); return err }, false},
	{"ADAPTBOT_TRACES", "", "recent requests' traces for GET /api/requests/ID (JSON lines, rotated at 8 MiB, one old file kept); empty is requests.jsonl beside the benchmark CSV, off turns it off",
		func(c *Config, v string) error { c.Traces = v; return nil }, false},
	{"ADAPTBOT_FAILURES_KEEP", strconv.Itoa(failures.DefaultKeep), "failure cases kept per tool (1 to 200): every failed call of a tool, de-duplicated by version and arguments; the least recently seen go first",
		func(c *Config, v string) (err error) {
			c.FailuresKeep, err = positive(v)
			if err == nil && c.FailuresKeep > failures.MaxKeep {
				err = fmt.Errorf("want at most %d", failures.MaxKeep)
			}
			return err
		}, false},
	{"ADAPTBOT_AUTO_REPAIR", "propose", "off, propose (a tool that keeps failing gets a repaired version that waits for approval) or on (a repair that passes its examples and failure cases serves); needs a model",
		func(c *Config, v string) (err error) { c.AutoRepair, err = adaptbot.ParseMode(v); return err }, false},
	{"ADAPTBOT_REPAIR_AFTER", strconv.Itoa(service.DefaultRepairAfter), "distinct failure cases of a tool's serving version, clear errors included (accepted ones never), that start an automatic repair",
		func(c *Config, v string) (err error) { c.RepairAfter, err = positive(v); return err }, false},
	{"ADAPTBOT_REPAIR_EVERY", dur(service.DefaultRepairEvery), "least time between two automatic repairs of one tool; one that failed is not tried again until a new failure case arrives",
		func(c *Config, v string) (err error) { c.RepairEvery, err = duration(v); return err }, false},
	{"ADAPTBOT_SKILLS", "propose", "off, propose (a chain of tools that recurs in chats gets one new tool for it, which waits for approval) or on (it serves once it passes the gate); needs a model",
		func(c *Config, v string) (err error) { c.Skills, err = adaptbot.ParseMode(v); return err }, false},
	{"ADAPTBOT_SKILL_AFTER", strconv.Itoa(service.DefaultSkillAfter), "how many chats must follow the same chain of tools before a skill is proposed for it",
		func(c *Config, v string) (err error) { c.SkillAfter, err = positive(v); return err }, false},
	{"ADAPTBOT_MAX_MESSAGE", strconv.Itoa(web.DefaultMaxMessage>>10) + "KiB", "longest chat message in bytes (a number, or with KiB or MiB); a longer one gets 413",
		func(c *Config, v string) (err error) { c.Edge.MaxMessage, err = parseSize(v); return err }, false},
	{"ADAPTBOT_MAX_INFLIGHT", strconv.Itoa(web.DefaultMaxInflight), "chats and builds served at once; past it 503 with Retry-After",
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
	// Issue 29: every provider takes a base URL through its standard variable.
	{"ANTHROPIC_BASE_URL", "", "a gateway or proxy in front of Anthropic's Messages API, as Anthropic's SDKs read it (https://host; /v1 is added to a bare host); empty is Anthropic's own",
		func(c *Config, v string) error { c.LLM.AnthropicBaseURL = v; return nil }, false},
	{"GOOGLE_GEMINI_BASE_URL", "", "where Gemini is reached, as Google's SDKs read it (https://host; /v1beta/openai is added to a bare host); empty is Google's own",
		func(c *Config, v string) error { c.LLM.GeminiBaseURL = v; return nil }, false},

	// Issue 27: identities that cannot be borrowed.
	{"ADAPTBOT_AUTH_BACKOFF_MAX", "5m", "the longest a client address waits after failing credentials again and again (five failures are free, then 1s, doubling)",
		func(c *Config, v string) (err error) { c.Identity.BackoffMax, err = duration(v); return err }, false},
	{"ADAPTBOT_MCP_SESSION_TIMEOUT", "30m", "an /mcp session idle this long ends; the client starts a new one",
		func(c *Config, v string) (err error) { c.Identity.MCPSessionTimeout, err = duration(v); return err }, false},

	// Issue 31: the native tier (package native).
	{"ADAPTBOT_NATIVE", "auto", "auto: once a tool version has served, and where a Go toolchain is found (go on PATH or in GOROOT), compile it in the background into a native worker program, which serves once it gives the interpreter's results on the examples and recent calls; off: every tool runs interpreted",
		func(c *Config, v string) (err error) {
			c.Native, err = native.ParseMode(v)
			if err != nil {
				return errors.New("use auto or off")
			}
			return nil
		}, false},
	{"ADAPTBOT_NATIVE_BUILDS", "1", "native builds that may run at once (each takes a CPU while it runs)",
		func(c *Config, v string) (err error) {
			c.NativeBuilds, err = wholeNumber(v)
			if err == nil && c.NativeBuilds < 1 {
				err = errors.New("at least 1")
			}
			return err
		}, false},

	// Issue 27: fair share of the in-flight slots.
	{"ADAPTBOT_MAX_INFLIGHT_PER_USER", strconv.Itoa(web.DefaultInflightShare) + "%", "chats and builds one person may have under way at once, as a share of ADAPTBOT_MAX_INFLIGHT (N%, at least 1 slot) or a number of slots; past it 429 with Retry-After, while others still get in (the one local user of a loopback server has no share)",
		func(c *Config, v string) (err error) {
			c.Edge.MaxInflightPerUser, c.Edge.InflightShare, err = parseShare(v)
			return err
		}, false},
}

// Write prints every setting, for `adaptbot config`: its value in effect
// (secrets as set or unset), where that came from, and its help text.
func Write(w io.Writer, c Config) error {
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
		default:
			v = Masked(v)
		}
		if _, err := fmt.Fprintf(w, "%-*s  %-26s  %-11s  %s\n", width, s.name, v, c.from[s.name], s.help); err != nil {
			return err
		}
	}
	return nil
}

// MarkdownTable is docs/configuration.md's table, made from settings.
func MarkdownTable() string {
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

// JSON is `adaptbot config --format json`: each setting's value in effect
// (secrets as set or unset), where it came from, and its help.
func JSON(c Config) []map[string]any {
	var out []map[string]any
	for _, s := range settings {
		row := map[string]any{"name": s.name, "from": c.from[s.name], "help": s.help}
		if s.secret {
			row["set"] = c.value(s.name) != ""
		} else {
			row["value"] = Masked(c.value(s.name))
		}
		out = append(out, row)
	}
	return out
}

// dur writes a default duration as people write it: 12h, 1m, 10s (not
// 12h0m0s).
func dur(d time.Duration) string {
	s := d.String()
	s, _ = strings.CutSuffix(s, "m0s")
	if strings.HasSuffix(d.String(), "m0s") {
		s += "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// Masked is a setting's value as `adaptbot config` shows it: credentials
// in a URL (https://user:secret@host, as OPENAI_BASE_URL, the OTLP
// endpoint or the OIDC issuer may hold them) are replaced by "xxxxx", and
// any key-shaped text by redact.Mask (issue 27).
func Masked(v string) string {
	if u, err := url.Parse(v); err == nil && u.User != nil && u.Host != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			u.User = url.User("xxxxx")
		}
		v = u.String()
	}
	return redact.String(v)
}
