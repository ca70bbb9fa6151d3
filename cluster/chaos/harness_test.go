//go:build chaos

package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/llm/llmtest"
)

// fleetReplica is the replica with no local workers: its tool calls run on
// the fleet, so killing a worker costs its calls.
const fleetReplica = 2

// The tools the suite changes: counterTool by builds, modifies, rollbacks
// and deletes through every replica; partTool by a hand edit on a replica
// cut off from NATS and a modify on another.
const (
	counterTool = "chaos_counter"
	partTool    = "chaos_part"
)

// harness is the cluster under test: NATS, three replicas (each behind a
// proxy to NATS of its own), two fleet workers, the scripted model and
// the witness of the acting tool's calls.
type harness struct {
	t        *testing.T
	dir      string
	bin      string
	nats     *natsServer
	replicas []*replica
	workers  []*worker
	model    *llmtest.Server
	witness  *witness
	direct   *nats.Conn // the suite's own connection, straight to NATS
	client   *http.Client
	version  atomic.Int64 // the version number of the next build
	changing atomic.Int32 // tool changes in flight

	mu sync.Mutex
	// expect is each changed tool's digest as the last acknowledged change
	// left it ("" for deleted).
	expect map[string]string
}

// witness is a system outside that the acting tool acts on: it counts each
// call by its token, so the suite sees whether any call acted twice.
type witness struct {
	url  string
	mu   sync.Mutex
	seen map[string]int
}

func newWitness(t *testing.T) *witness {
	w := &witness{seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.seen[r.URL.Query().Get("token")]++
		w.mu.Unlock()
		io.WriteString(rw, "ok") //nolint:errcheck
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL + "/act"
	return w
}

func (w *witness) count(token string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[token]
}

func (w *witness) twice() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for tok, n := range w.seen {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", tok, n))
		}
	}
	return out
}

// startCluster builds the binaries and starts every process; r1 starts
// first and seeds the cluster with its tools (the shipped ones, the acting
// tool and partTool), the others take them from the cluster.
func startCluster(t *testing.T) *harness {
	t.Helper()
	dir := os.Getenv("CHAOS_DIR") // kept after the run, for a person to look at
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, expect: map[string]string{}}
	h.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}}
	t.Cleanup(h.client.CloseIdleConnections)
	var natsBin string
	began := time.Now()
	h.bin, natsBin = build(t, filepath.Join(dir, "bin"))
	t.Logf("built AdaptBot and nats-server in %v", time.Since(began).Round(time.Millisecond))

	h.nats = newNATS(t, natsBin, filepath.Join(dir, "nats"))
	if err := h.nats.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.nats.p.kill() })
	nc, err := cluster.Connect(cluster.Options{URL: h.nats.URL(), Name: "chaos suite", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h.direct = nc

	for i := range 2 {
		id := fmt.Sprintf("w%d", i+1)
		w := &worker{id: id, bin: h.bin, logPath: filepath.Join(dir, id+".log"),
			args: []string{"worker", "--nats", h.nats.URL(), "--id", id},
			// Its own tools folder: a worker keeps its native builds under
			// it, and the default (tools/ in the working folder) is this
			// package's source folder.
			env: []string{"HOME=" + dir, "ADAPTBOT_TOOLS_DIR=" + filepath.Join(dir, id, "tools"),
				"ADAPTBOT_WORKERS=2", "ADAPTBOT_TOOL_TIMEOUT=10s", "ADAPTBOT_EGRESS_ALLOW=127.0.0.1"}}
		if err := w.start(); err != nil {
			t.Fatal(err)
		}
		h.workers = append(h.workers, w)
	}
	t.Cleanup(func() {
		for _, w := range h.workers {
			if w.p.alive() {
				w.p.stop(10 * time.Second)
			}
		}
	})
	h.model = llmtest.New(t, model)
	h.witness = newWitness(t)

	for i := range 3 {
		id := fmt.Sprintf("r%d", i+1)
		rdir := filepath.Join(dir, id)
		tools := filepath.Join(rdir, "tools")
		if err := copyTools("../../tools", tools); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			act, err := os.ReadFile("testdata/chaos_act.go")
			if err != nil {
				t.Fatal(err)
			}
			if err := writeTool(tools, "chaos_act", act); err != nil {
				t.Fatal(err)
			}
			if err := writeTool(tools, partTool, []byte(counterSource(partTool, "as shipped", 0))); err != nil {
				t.Fatal(err)
			}
		}
		proxy := clustertest.NewProxy(t, h.nats.Addr())
		workers := "1"
		if i == fleetReplica {
			workers = "0"
		}
		r := &replica{id: id, dir: rdir, port: freePort(t), proxy: proxy, bin: h.bin}
		r.env = []string{
			"HOME=" + rdir,
			"ADAPTBOT_ADDR=127.0.0.1:" + fmt.Sprint(r.port),
			"ADAPTBOT_TOOLS_DIR=" + tools,
			"ADAPTBOT_REGISTRY=" + filepath.Join(rdir, "tools_registry.json"),
			"ADAPTBOT_BENCHMARKS=" + filepath.Join(rdir, "benchmarks", "benchmarks.csv"),
			"ADAPTBOT_USERS=" + filepath.Join(rdir, "users.json"),
			"ADAPTBOT_MCP_CONFIG=" + filepath.Join(rdir, "mcp_servers.json"),
			"ADAPTBOT_NATS_URL=" + proxy.URL(),
			"ADAPTBOT_NATS_MONITOR=" + fmt.Sprintf("http://127.0.0.1:%d", h.nats.monitor),
			"ADAPTBOT_REPLICA_ID=" + id,
			"ADAPTBOT_WORKERS=" + workers,
			"ADAPTBOT_TOOL_TIMEOUT=10s",
			"ADAPTBOT_EGRESS_ALLOW=127.0.0.1",
			"ADAPTBOT_RATE_LIMIT=off",
			"ADAPTBOT_NATIVE=off",
			"ADAPTBOT_SKILLS=off",
			"ADAPTBOT_AUTO_REPAIR=off",
			"ADAPTBOT_FAILURES_KEEP=200",
			"ADAPTBOT_MAX_INFLIGHT=64",
			"OPENAI_BASE_URL=" + h.model.BaseURL(),
			"OPENAI_API_KEY=test",
			"ADAPTBOT_MODEL=scripted",
		}
		h.replicas = append(h.replicas, r)
	}
	t.Cleanup(func() {
		for _, r := range h.replicas {
			if r.p != nil && r.p.alive() {
				r.p.stop(20 * time.Second)
			}
		}
	})
	if err := h.replicas[0].start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, r := range h.replicas[1:] {
		wg.Go(func() { errs[i] = r.start() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	return h
}

// upReplicas are the replicas the load may send to.
func (h *harness) upReplicas() []int {
	var out []int
	for i, r := range h.replicas {
		if r.isUp() {
			out = append(out, i)
		}
	}
	return out
}

// digest is the digest replica r serves of tool ("" when it serves none),
// or an error when it does not answer.
func (h *harness) digest(r int, tool string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var e struct {
		SHA256 string `json:"sha256"`
	}
	code, err := getJSON(ctx, h.replicas[r].URL()+"/api/tools/"+tool, &e)
	switch {
	case err != nil:
		return "", err
	case code == 404:
		return "", nil
	case code != 200:
		return "", fmt.Errorf("%s: GET /api/tools/%s = %d", h.replicas[r].id, tool, code)
	}
	return e.SHA256, nil
}

// acknowledged notes that a change of tool through replica r was
// acknowledged: what r serves now is what every replica must serve.
func (h *harness) acknowledged(r int, tool string) error {
	d, err := h.digest(r, tool)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.expect[tool] = d
	h.mu.Unlock()
	return nil
}

func (h *harness) expected() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for k, v := range h.expect {
		out[k] = v
	}
	return out
}

// health is a replica's /healthz cluster part.
type health struct {
	Cluster struct {
		Connected     bool `json:"connected"`
		Spooled       int  `json:"spooled"`
		SpooledTraces int  `json:"spooled_traces"`
	} `json:"cluster"`
}

func (h *harness) health(r int) (health, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var hl health
	code, err := getJSON(ctx, h.replicas[r].URL()+"/healthz", &hl)
	if err == nil && code != 200 {
		err = fmt.Errorf("/healthz = %d", code)
	}
	return hl, err
}

// build asks replica r to build (op create or modify) tool at a new
// version, as a stream, and notes the change once acknowledged.
func (h *harness) build(l *load, r int, op, tool string) *outcome {
	k := h.version.Add(1)
	body := fmt.Sprintf(`{"request": "chaos build %s version %d", "op": %q, "tool": %q}`, tool, k, op, tool)
	o := l.do(r, "change-"+op, "POST", "/api/tools/build", body, true)
	if o.answered() {
		if err := h.acknowledged(r, tool); err != nil {
			h.t.Logf("after a %s of %s on %s: %v", op, tool, h.replicas[r].id, err)
		}
	}
	return o
}

// sha is a source's digest as the registry names it.
func sha(src string) string {
	s := sha256.Sum256([]byte(src))
	return hex.EncodeToString(s[:])
}

// logs are the tails of every process's output, for a failure.
func (h *harness) logs() string {
	var b strings.Builder
	for _, r := range h.replicas {
		if r.p != nil {
			fmt.Fprintf(&b, "\n=== %s\n%s", r.id, tail(r.p.out.String()))
		}
	}
	return b.String()
}
