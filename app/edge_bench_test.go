package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/config"
	"adaptbot/llm/llmtest"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
	"adaptbot/traces"
	"adaptbot/web"
)

// BenchmarkEdgeHealthz measures what one request costs at the edge: GET
// /healthz through the server's whole handler chain, in memory, without a
// network. Compare it across commits to see what the middleware costs.
func BenchmarkEdgeHealthz(b *testing.B) {
	dir := b.TempDir()
	copyToolsTB(b, dir)
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"ADAPTBOT_TOOLS_DIR": filepath.Join(dir, "tools"),
			"ADAPTBOT_REGISTRY":  filepath.Join(dir, "tools_registry.json"),
			"ADAPTBOT_SANDBOX":   "inprocess",
		}[k]
	})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	w, err := openWorld(context.Background(), cfg, hooks{}, nil, log, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	s := web.NewServer(w.service(nil, nil, nil, nil, nil), testAuth(b, cfg), nil, edgeOptions(cfg, log))
	var req fasthttp.Request
	req.Header.SetMethod("GET")
	req.SetRequestURI("/healthz")
	req.Header.SetHost("127.0.0.1:3000")
	serveInMemory(b, s, &req)
}

// BenchmarkChat200x50 sends 200 chats, 50 at a time, over HTTP to the
// whole server (started by run) against a scripted model that answers at
// once: the cost of the edge, the agent and the CSV per chat, without a
// model's latency. One op is 200 chats.
func BenchmarkChat200x50(b *testing.B) {
	llmSrv := llmtest.New(b, func(r llmtest.Request) llmtest.Reply {
		switch f := r.Forced(); f {
		case "set_intent":
			return llmtest.Call(f, `{"intent":"CHAT"}`)
		case "route":
			return llmtest.Call(f, `{"decision":"general"}`)
		}
		return llmtest.Say("Hello! I am a scripted model.")
	})
	url := startTB(b, map[string]string{
		"OPENAI_BASE_URL": llmSrv.BaseURL(), "OPENAI_API_KEY": "test", "ADAPTBOT_MODEL": "scripted",
		"ADAPTBOT_RATE_LIMIT": "off", "ADAPTBOT_SANDBOX": "inprocess",
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 50}}
	const chats, concurrency = 200, 50
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		work := make(chan int)
		var wg sync.WaitGroup
		for g := 0; g < concurrency; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range work {
					req, _ := http.NewRequest("POST", url+"/chat", strings.NewReader(fmt.Sprintf(`{"message":"hello %d"}`, n)))
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						continue
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("chat %d: status %d", n, resp.StatusCode)
					}
				}
			}()
		}
		for n := 0; n < chats; n++ {
			work <- n
		}
		close(work)
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(chats*b.N)/b.Elapsed().Seconds(), "chats/s")
}

// copyToolsTB copies the shipped tools into dir, as copyTools does, for
// benchmarks.
func copyToolsTB(tb testing.TB, dir string) {
	srcs, _ := filepath.Glob("../tools/*/*.go")
	for _, src := range srcs {
		name := filepath.Base(filepath.Dir(src))
		if filepath.Base(src) != name+".go" {
			continue
		}
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.MkdirAll(filepath.Join(dir, "tools", name), 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "tools", name, name+".go"), b, 0o644)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// startTB runs AdaptBot through run() over a temp directory, as start does,
// for benchmarks, and returns its URL.
func startTB(tb testing.TB, env map[string]string) string {
	dir := tb.TempDir()
	copyToolsTB(tb, dir)
	full := map[string]string{
		"ADAPTBOT_ADDR":       "127.0.0.1:0",
		"ADAPTBOT_TOOLS_DIR":  filepath.Join(dir, "tools"),
		"ADAPTBOT_REGISTRY":   filepath.Join(dir, "tools_registry.json"),
		"ADAPTBOT_BENCHMARKS": filepath.Join(dir, "benchmarks", "benchmarks.csv"),
		"ADAPTBOT_USERS":      filepath.Join(dir, "users.json"),
		"ADAPTBOT_WORKERS":    "2",
	}
	for k, v := range env {
		full[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	ended := make(chan error, 1)
	go func() {
		ended <- run(ctx, []string{"adaptbot"}, func(k string) string { return full[k] }, strings.NewReader(""), out, &syncBuffer{})
	}()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-ended:
		case <-time.After(20 * time.Second):
			tb.Error("server did not stop within 20s")
		}
	})
	re := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-ended:
			tb.Fatalf("server exited: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("server did not start:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// instantTool answers at once: what is left of a request for it is the
// edge's and the service's own work.
type instantTool struct{}

func (instantTool) Spec() toolbox.Spec {
	return toolbox.Spec{Name: "instant", Origin: adaptbot.OriginBuiltin, Version: 1, Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (instantTool) Call(context.Context, json.RawMessage) (string, error) { return "ok", nil }

// instantBox offers the instant tool alone.
type instantBox struct{}

func (instantBox) Tool(name string) (toolbox.Tool, bool) { return instantTool{}, name == "instant" }
func (instantBox) Serving() []toolbox.Tool               { return []toolbox.Tool{instantTool{}} }
func (instantBox) Len() int                              { return 1 }
func (instantBox) OnChange(func(toolbox.Change))         {}

// nowhere takes rows and trace records and keeps nothing: writing them is
// the logger's and the trace store's cost, measured in their packages.
type nowhere struct{}

func (nowhere) Log(benchmarks.Row) error          { return nil }
func (nowhere) Add(traces.Record) error           { return nil }
func (nowhere) Get(string) (traces.Record, error) { return traces.Record{}, traces.ErrNotFound }
func (nowhere) Recent(int) []traces.Record        { return nil }

// dropSpans is an exporter that takes batches of spans and drops them.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkEdgeAndService is a direct run of a tool that answers at once,
// in memory, as a client sends it: POST /api/tools/instant/run through the
// whole server (security headers, Host and Origin checks, sign-in, door and
// traceparent, route rule, decoding, the service's lifecycle, encoding),
// against a bare Fiber handler that calls the tool and encodes its output.
// The difference is what the edge and the service add to a request; with
// tracing on, spans go through a batching processor, as to OTLP.
func BenchmarkEdgeAndService(b *testing.B) {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/api/tools/instant/run")
	req.Header.SetHost("127.0.0.1:3000")
	req.Header.SetContentType("application/json")
	req.SetBodyString(`{"x": 1}`)
	b.Run("bare handler", func(b *testing.B) {
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		app.Post("/api/tools/:name/run", func(c *fiber.Ctx) error {
			out, err := instantTool{}.Call(c.UserContext(), c.Body())
			if err != nil {
				return err
			}
			return c.JSON(fiber.Map{"tool": c.Params("name"), "output": out})
		})
		serveInMemory(b, fiberApp{app}, &req)
	})
	for _, bc := range []struct {
		name    string
		tracing bool
	}{{"edge and service", false}, {"edge and service, traced", true}} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.tracing {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(dropSpans{}))
				defer tp.Shutdown(context.Background())
				defer telemetry.Enable(tp, false)()
			}
			cfg := config.Config{Addr: "127.0.0.1:3000"}
			svc := service.New(service.Deps{Tools: instantBox{}, Rows: nowhere{}, Traces: nowhere{}, Metrics: telemetry.NewMetrics()})
			s := web.NewServer(svc, testAuth(b, cfg), nil, edgeOptions(cfg, nil))
			serveInMemory(b, s, &req)
		})
	}
}

// fiberApp serves a bare Fiber app as the edge serves itself, for the
// benchmark's baseline.
type fiberApp struct{ app *fiber.App }

func (f fiberApp) Serve(ln net.Listener) error { return f.app.Listener(ln) }
