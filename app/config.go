package main

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"time"

	"adaptbot/llm/provider"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// Config is everything AdaptBot reads from its environment, read in one place.
type Config struct {
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

	// Generator.
	BuildAttempts int

	// HistoryKeep is how many versions of each tool the registry keeps.
	HistoryKeep int

	// The edge's limits and cross-site rules (app/limits.go, app/guard.go).
	Edge EdgeConfig
}

// setting documents one variable, for the README and `adaptbot config`.
type setting struct{ name, def, meaning string }

var settings = []setting{
	{"ADAPTBOT_ADDR", "127.0.0.1:3000", "listen address"},
	{"ADAPTBOT_TOOLS_DIR", "tools", "tool sources"},
	{"ADAPTBOT_REGISTRY", "tools_registry.json", "registry file"},
	{"ADAPTBOT_HISTORY_KEEP", "20", "versions of each tool kept in tools/.history for rollback; older ones are pruned"},
	{"ADAPTBOT_BENCHMARKS", "benchmarks/benchmarks.csv", "benchmark CSV"},
	{"ADAPTBOT_LLM_PROVIDER", "", "openai, ollama, anthropic, googleai; empty picks from the keys present"},
	{"ADAPTBOT_MODEL", "", "model name; empty means the provider's usual default"},
	{"ADAPTBOT_MODEL_TIMEOUT", "60s", "limit of one model call (one try); the chat deadline is derived from it"},
	{"ADAPTBOT_MODEL_RETRIES", "2", "retries of a model call after a 429, a 5xx, a connection error or a timeout before any output"},
	{"ADAPTBOT_EMBEDDING_MODEL", "", "embedding model of the provider; when set, tool routing fuses dense scores with the lexical ones"},
	{"ADAPTBOT_ADMIN_TOKEN", "", "required for build, modify, delete, rollback and direct runs (through the API, /mcp or chat) when listening beyond loopback"},
	{"ADAPTBOT_SANDBOX", "workers", "workers (tools run in supervised worker processes) or inprocess (development only)"},
	{"ADAPTBOT_WORKERS", "number of CPUs", "size of the worker pool"},
	{"ADAPTBOT_SANDBOX_LANDLOCK", "auto", "auto (workers confine their file access with Landlock and deny dangerous system calls with seccomp where the kernel has them), require (refuse to start without both) or off"},
	{"ADAPTBOT_TOOL_TIMEOUT", "10s", "wall-clock limit of one tool call; a tool may declare a lower one"},
	{"ADAPTBOT_EGRESS_ALLOW", "", "hosts or CIDRs tools may reach even though they are private (comma-separated)"},
	{"ADAPTBOT_LEARN", "on", "on (requests like one a tool served before, in this server or in the benchmarks CSV, route to that tool) or off (route on the tools' own text alone)"},
	{"ADAPTBOT_DISCOVERY", "active", "active (shortlist plus requests for more tools) or passive (every tool in the prompt)"},
	{"ADAPTBOT_SHORTLIST", "5", "tools the classifier sees at first"},
	{"ADAPTBOT_MAX_DISCOVERY", "5", "requests for more tools per message"},
	{"ADAPTBOT_BUILD_ATTEMPTS", "3", "attempts (first try plus repairs) per tool build"},
	{"ADAPTBOT_MCP_CONFIG", "mcp_servers.json", "external MCP servers"},
	{"ADAPTBOT_MAX_MESSAGE", "32KiB", "longest chat message in bytes (a number, or with KiB or MiB); a longer one gets 413"},
	{"ADAPTBOT_MAX_INFLIGHT", "64", "chats and builds served at once; past it 503 with Retry-After"},
	{"ADAPTBOT_RATE_LIMIT", "60/min", "chats and builds per client address (N/s, N/min or N/hour, or off); past it 429 with Retry-After"},
	{"ADAPTBOT_ALLOWED_ORIGINS", "", "other origins (scheme://host:port) whose pages may call the API (comma-separated); others get 403"},
	{"ADAPTBOT_ALLOWED_HOSTS", "", "host names the server answers to besides loopback and the listen host (comma-separated); others get 421"},
}

// loadConfig reads the configuration. Every bad value is reported at once.
func loadConfig(getenv func(string) string) (Config, error) {
	var problems []string
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	num := func(name string, def int) int {
		v := get(name, "")
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			problems = append(problems, fmt.Sprintf("%s=%q: want a whole number ≥ 0", name, v))
			return def
		}
		return n
	}
	c := Config{
		Addr:       get("ADAPTBOT_ADDR", "127.0.0.1:3000"),
		ToolsDir:   get("ADAPTBOT_TOOLS_DIR", "tools"),
		Registry:   get("ADAPTBOT_REGISTRY", "tools_registry.json"),
		Benchmarks: get("ADAPTBOT_BENCHMARKS", "benchmarks/benchmarks.csv"),
		MCPConfig:  get("ADAPTBOT_MCP_CONFIG", "mcp_servers.json"),
		AdminToken: get("ADAPTBOT_ADMIN_TOKEN", ""),
		LLM: provider.Config{
			Provider:       get("ADAPTBOT_LLM_PROVIDER", ""),
			Model:          get("ADAPTBOT_MODEL", ""),
			EmbeddingModel: get("ADAPTBOT_EMBEDDING_MODEL", ""),
			OpenAIKey:      get("OPENAI_API_KEY", ""),
			OpenAIBaseURL:  get("OPENAI_BASE_URL", ""),
			OllamaHost:     get("OLLAMA_HOST", ""),
			AnthropicKey:   get("ANTHROPIC_API_KEY", ""),
			GoogleKey:      get("GOOGLE_API_KEY", ""),
			Retries:        num("ADAPTBOT_MODEL_RETRIES", 2),
		},
		HistoryKeep:   num("ADAPTBOT_HISTORY_KEEP", 20),
		Workers:       num("ADAPTBOT_WORKERS", runtime.NumCPU()),
		Shortlist:     num("ADAPTBOT_SHORTLIST", 5),
		MaxDiscovery:  num("ADAPTBOT_MAX_DISCOVERY", 5),
		BuildAttempts: num("ADAPTBOT_BUILD_ATTEMPTS", 3),
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.BuildAttempts == 0 {
		c.BuildAttempts = 1
	}
	if c.HistoryKeep == 0 {
		c.HistoryKeep = 1 // the serving version is always kept
	}
	switch p := strings.ToLower(c.LLM.Provider); p {
	case "", "openai", "ollama", "anthropic", "googleai":
	default:
		problems = append(problems, fmt.Sprintf("ADAPTBOT_LLM_PROVIDER=%q: use openai, ollama, anthropic or googleai", c.LLM.Provider))
	}
	switch v := strings.ToLower(get("ADAPTBOT_SANDBOX", "workers")); v {
	case "workers":
	case "inprocess", "in-process":
		c.InProcess = true
	default:
		problems = append(problems, fmt.Sprintf("ADAPTBOT_SANDBOX=%q: use workers or inprocess", v))
	}
	switch v := strings.ToLower(get("ADAPTBOT_LEARN", "on")); v {
	case "on":
		c.Learn = true
	case "off":
	default:
		problems = append(problems, fmt.Sprintf("ADAPTBOT_LEARN=%q: use on or off", v))
	}
	switch v := strings.ToLower(get("ADAPTBOT_DISCOVERY", "active")); v {
	case "active":
	case "passive":
		c.Passive = true
	default:
		problems = append(problems, fmt.Sprintf("ADAPTBOT_DISCOVERY=%q: use active or passive", v))
	}
	timeout := get("ADAPTBOT_TOOL_TIMEOUT", "10s")
	d, err := time.ParseDuration(timeout)
	if err != nil || d <= 0 {
		problems = append(problems, fmt.Sprintf("ADAPTBOT_TOOL_TIMEOUT=%q: want a duration such as 10s", timeout))
	}
	c.CallTimeout = d
	modelTimeout := get("ADAPTBOT_MODEL_TIMEOUT", "60s")
	if c.LLM.Timeout, err = time.ParseDuration(modelTimeout); err != nil || c.LLM.Timeout <= 0 {
		problems = append(problems, fmt.Sprintf("ADAPTBOT_MODEL_TIMEOUT=%q: want a duration such as 60s", modelTimeout))
	}
	if c.Landlock, err = sandbox.ParseLandlock(get("ADAPTBOT_SANDBOX_LANDLOCK", "auto")); err != nil {
		problems = append(problems, fmt.Sprintf("ADAPTBOT_SANDBOX_LANDLOCK=%q: use auto, require or off", get("ADAPTBOT_SANDBOX_LANDLOCK", "")))
	} else if c.Landlock == sandbox.LandlockRequire && c.InProcess {
		problems = append(problems, "ADAPTBOT_SANDBOX_LANDLOCK=require confines worker processes: it needs ADAPTBOT_SANDBOX=workers")
	}
	if c.Egress, err = toolkit.ParsePolicy(get("ADAPTBOT_EGRESS_ALLOW", "")); err != nil {
		problems = append(problems, "ADAPTBOT_EGRESS_ALLOW: "+err.Error())
	}
	problems = append(problems, c.Edge.load(get)...)
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		problems = append(problems, fmt.Sprintf("ADAPTBOT_ADDR=%q: want host:port, e.g. 127.0.0.1:3000", c.Addr))
	}
	if len(problems) > 0 {
		return c, fmt.Errorf("bad configuration:\n  %s", strings.Join(problems, "\n  "))
	}
	return c, nil
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
