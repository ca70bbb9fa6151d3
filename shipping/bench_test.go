package shipping

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/sandbox"
	"adaptbot/tools/calculator"
	"adaptbot/tools/text_stats"
)

// The speed of an exported tool against the same tool interpreted in a
// sandbox worker. The figures in README.md come from:
//
//	go test ./shipping -run '^$' -bench 'Compute|StdioRoundTrip' -benchtime 20x -count 3
//
// Compute is the tool's own work: native code (what an export compiles)
// against a call of a warm worker (what AdaptBot runs). StdioRoundTrip is
// what an MCP client waits for: tools/call over stdio to the exported
// server, and to `adaptbot mcp` with one worker.

// longText is about 100 KB of prose in paragraphs.
var longText = func() string {
	para := "The quick brown fox jumps over the lazy dog. Dr. Smith's well-known café, at example.com, " +
		"serves 3.14 pies a day! Does it? Yes: Ünïcödé text, 日本語のテキスト, and don't forget em—dashes.\n\n"
	return strings.Repeat(para, 100_000/len(para)+1)[:100_000]
}()

// longExpression is an expression near the calculator's 2,000-byte limit.
var longExpression = func() string {
	term := "(1.5 + 2.25) * 3 - 4 / 5 + sqrt(16) ^ 2 - max(1, 7, 3) % 4 + round(pi * 100, 2) / e"
	var b strings.Builder
	for b.Len()+len(term)+3 < 2000 {
		if b.Len() > 0 {
			b.WriteString(" + ")
		}
		b.WriteString(term)
	}
	return b.String()
}()

var (
	binOnce     sync.Once
	adaptbotBin string
	binErr      error
)

// adaptbotBinary builds ../app once: the worker and `adaptbot mcp`.
func adaptbotBinary(b *testing.B) string {
	b.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "adaptbot-ship-bench-")
		if err != nil {
			binErr = err
			return
		}
		adaptbotBin = filepath.Join(dir, "adaptbot")
		cmd := exec.Command("go", "build", "-o", adaptbotBin, "./app")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./app: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		b.Fatal(binErr)
	}
	return adaptbotBin
}

func toolSource(b *testing.B, name string) []byte {
	b.Helper()
	src, err := os.ReadFile(filepath.Join("..", "tools", name, name+".go"))
	if err != nil {
		b.Fatal(err)
	}
	return src
}

func BenchmarkCompute(b *testing.B) {
	bin := adaptbotBinary(b)
	r, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeWorkers, PoolSize: 1, CallTimeout: time.Minute, WorkerCommand: []string{bin, "worker"}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	cases := []struct {
		name, tool string
		input      any
		native     func() (any, error)
	}{
		{"text_stats_100KB", "text_stats", text_stats.Input{Text: longText}, func() (any, error) {
			return text_stats.Execute(ctx, text_stats.Input{Text: longText})
		}},
		{"calculator_2000B", "calculator", calculator.Input{Expression: longExpression}, func() (any, error) {
			return calculator.Execute(ctx, calculator.Input{Expression: longExpression})
		}},
	}
	for _, c := range cases {
		b.Run(c.name+"/native", func(b *testing.B) {
			for b.Loop() {
				if _, err := c.native(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/worker", func(b *testing.B) {
			input, _ := json.Marshal(c.input)
			call := sandbox.Call{Tool: c.tool, Source: toolSource(b, c.tool), Input: input}
			if _, err := r.Run(ctx, call); err != nil { // compiled and cached before timing
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := r.Run(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStdioRoundTrip(b *testing.B) {
	bin := adaptbotBinary(b)
	h := newHome(b, false, "calculator", "text_stats")
	items, err := Select(h.reg, []string{"calculator", "text_stats"})
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(b.TempDir(), "bench-tools")
	if _, err := Export(items, ExportOptions{Dir: dir}); err != nil {
		b.Fatal(err)
	}
	exported := filepath.Join(b.TempDir(), "bench-tools-bin")
	goIn(b, dir, "build", "-o", exported, ".")

	servers := map[string]func() *exec.Cmd{
		"exported": func() *exec.Cmd { return exec.Command(exported) },
		"adaptbot": func() *exec.Cmd {
			c := exec.Command(bin, "mcp")
			c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + h.dir, "ADAPTBOT_TOOLS_DIR=" + h.tools,
				"ADAPTBOT_REGISTRY=" + filepath.Join(h.dir, "tools_registry.json"), "ADAPTBOT_WORKERS=1", "ADAPTBOT_TOOL_TIMEOUT=60s"}
			return c
		},
	}
	cases := []struct {
		name, tool string
		args       map[string]any
	}{
		{"calculator_small", "calculator", map[string]any{"expression": "2+3*4"}},
		{"calculator_2000B", "calculator", map[string]any{"expression": longExpression}},
		{"text_stats_100KB", "text_stats", map[string]any{"text": longText}},
	}
	for _, c := range cases {
		for _, server := range []string{"exported", "adaptbot"} {
			b.Run(c.name+"/"+server, func(b *testing.B) {
				ctx := context.Background()
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: servers[server]()}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				params := &sdk.CallToolParams{Name: c.tool, Arguments: c.args}
				if res, err := cs.CallTool(ctx, params); err != nil || res.IsError { // warm: the worker compiles the tool
					b.Fatalf("%v %+v", err, res)
				}
				for b.Loop() {
					if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
						b.Fatalf("%v %+v", err, res)
					}
				}
			})
		}
	}
}
