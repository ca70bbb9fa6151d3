package sandbox_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

func TestRunnersCall(t *testing.T) {
	for name, r := range runners(t, testOptions(t)) {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				name, tool, src, input string
				want                   string
				kind                   adaptbot.Failure
				msg                    string
			}{
				{"json result", "calculator", calculator, `{"a":1,"b":2}`, `{"sum":3}`, "", ""},
				{"string result as is", "echo", echo, `{"text":"hi"}`, "HI", "", ""},
				{"tool error", "echo", echo, `{"text":""}`, "", adaptbot.FailError, "nothing to echo"},
				{"unknown field", "calculator", calculator, `{"a":1,"c":2}`, "", adaptbot.FailInvalidArgs, `"c" is not a parameter of the tool`},
				{"wrong type", "calculator", calculator, `{"a":"one"}`, "", adaptbot.FailInvalidArgs, `"a" must be a number, not text`},
				{"two values", "calculator", calculator, `{"a":1} {}`, "", adaptbot.FailInvalidArgs, "not valid JSON"},
				{"not an object", "calculator", calculator, `[1]`, "", adaptbot.FailInvalidArgs, "the arguments must be an object, not a list"},
				{"no input", "calculator", calculator, ``, `{"sum":0}`, "", ""},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					res, err := run(t, r, tt.tool, tt.src, tt.input)
					if tt.kind != "" {
						wantKind(t, err, tt.kind, tt.msg)
						if !strings.Contains(err.Error(), "tool "+tt.tool) {
							t.Errorf("error %q does not name the tool", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if res.Output != tt.want {
						t.Errorf("output %q, want %q", res.Output, tt.want)
					}
				})
			}
		})
	}
}

func TestRunnersCompile(t *testing.T) {
	broken := strings.Replace(calculator, "in.A + in.B", "in.A + missing", 1)
	for name, r := range runners(t, testOptions(t)) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if err := r.Compile(ctx, "calculator", []byte(calculator)); err != nil {
				t.Fatalf("Compile: %v", err)
			}
			err := r.Compile(ctx, "calculator", []byte(broken))
			wantKind(t, err, adaptbot.FailCompile, "undefined: missing")
			if !strings.Contains(err.Error(), "calculator.go:") {
				t.Errorf("compile error %q does not point into calculator.go", err)
			}
			_, err = run(t, r, "calculator", string(broken), `{}`)
			wantKind(t, err, adaptbot.FailCompile, "undefined: missing")

			err = r.Compile(ctx, "calculator", []byte(strings.Replace(calculator, `import "context"`, "import (\n\t\"context\"\n\t\"os\"\n)\n\nvar _ = os.Args", 1)))
			wantKind(t, err, adaptbot.FailCompile, `import "os" is not allowed`)

			err = r.Compile(ctx, "adder", []byte(calculator))
			wantKind(t, err, adaptbot.FailCompile, `package is "calculator", must be "adder"`)
		})
	}
}

func TestRunnersPanic(t *testing.T) {
	src := strings.Replace(calculator, "return Output{", "var m map[string]int\n\tm[\"x\"] = 1\n\treturn Output{", 1)
	for name, r := range runners(t, testOptions(t)) {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, r, "calculator", src, `{}`)
			wantKind(t, err, adaptbot.FailPanic, "assignment to entry in nil map")
			// The runner carries on.
			if _, err := run(t, r, "calculator", calculator, `{"a":1}`); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A tool's own Timeout lowers the runner's, whether or not the tool honours
// its context.
func TestRunnersToolTimeout(t *testing.T) {
	const tmpl = `// Package slow waits.
package slow

import (
	"context"
	"time"
)

const Timeout = 200 * time.Millisecond

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	%s
	return "late", nil
}
`
	bodies := map[string]string{
		"cooperative": `select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(5 * time.Second):
	}`,
		"ignores context": `time.Sleep(5 * time.Second)`,
	}
	opts := testOptions(t)
	opts.CallTimeout = 5 * time.Second
	for name, r := range runners(t, opts) {
		for how, body := range bodies {
			t.Run(name+"/"+how, func(t *testing.T) {
				start := time.Now()
				_, err := run(t, r, "slow", fmt.Sprintf(tmpl, body), `{}`)
				wantKind(t, err, adaptbot.FailTimeout, "200ms time limit")
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("took %v: the tool's 200ms Timeout was not applied", d)
				}
			})
		}
	}
}

func TestRunnersOutputCap(t *testing.T) {
	opts := testOptions(t)
	opts.MaxOutput = 10
	for name, r := range runners(t, opts) {
		t.Run(name, func(t *testing.T) {
			if res, err := run(t, r, "echo", echo, `{"text":"0123456789"}`); err != nil || res.Output != "0123456789" {
				t.Fatalf("at the cap: %q, %v", res.Output, err)
			}
			_, err := run(t, r, "echo", echo, `{"text":"0123456789a"}`)
			wantKind(t, err, adaptbot.FailBadOutput, "over the 10 bytes output limit")
		})
	}
}

func TestRunnersConcurrent(t *testing.T) {
	for name, r := range runners(t, testOptions(t)) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := 0; g < 6; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 8; i++ {
						src, tool, in, want := calculator, "calculator", fmt.Sprintf(`{"a":%d,"b":%d}`, g, i), fmt.Sprintf(`{"sum":%d}`, g+i)
						if i%2 == 1 {
							src, tool, in, want = echo, "echo", fmt.Sprintf(`{"text":"g%di%d"}`, g, i), fmt.Sprintf("G%dI%d", g, i)
						}
						res, err := r.Run(context.Background(), sandbox.Call{Tool: tool, Source: []byte(src), Input: []byte(in)})
						if err != nil {
							errs <- err
							return
						}
						if res.Output != want {
							errs <- fmt.Errorf("got %q, want %q", res.Output, want)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// A burst of calls of one tool in-process reuses interpreters instead of
// loading one per call: loads of one version are bounded by PoolSize, and a
// waiting call takes an interpreter put back by another. A fleet worker
// serving a burst on a busy machine timed out loading otherwise.
func TestInProcessBurstReusesInterpreters(t *testing.T) {
	opts := testOptions(t)
	opts.PoolSize = 2
	r := sandbox.NewInProcess(opts)
	t.Cleanup(func() { r.Close() })
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Run(context.Background(), sandbox.Call{Tool: "echo", Source: []byte(echo), Input: []byte(fmt.Sprintf(`{"text":"c%d"}`, i))})
			if err != nil {
				errs <- err
				return
			}
			if want := fmt.Sprintf("C%d", i); res.Output != want {
				errs <- fmt.Errorf("got %q, want %q", res.Output, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d calls loaded %d interpreters", n, r.Loaded())
	if got := r.Loaded(); got > n/4 {
		t.Errorf("%d calls loaded %d interpreters, want at most %d", n, got, n/4)
	}
}

// The toolkit a tool gets follows the runner's egress policy, in workers too.
func TestRunnersEgressPolicy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from loopback")
	}))
	defer srv.Close()
	src := `// Package fetch fetches a URL.
package fetch

import (
	"context"

	"adaptbot/toolkit"
)

type Input struct {
	URL string ` + "`json:\"url\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	return toolkit.Get(ctx, in.URL)
}
`
	input := fmt.Sprintf(`{"url":%q}`, srv.URL)

	for name, r := range runners(t, testOptions(t)) {
		t.Run(name+"/default refuses loopback", func(t *testing.T) {
			_, err := run(t, r, "fetch", src, input)
			wantKind(t, err, adaptbot.FailError, "blocked by the egress policy")
		})
	}
	opts := testOptions(t)
	opts.Toolkit.Policy = toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	for name, r := range runners(t, opts) {
		t.Run(name+"/allowlist admits it", func(t *testing.T) {
			res, err := run(t, r, "fetch", src, input)
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != "hello from loopback" {
				t.Errorf("output %q", res.Output)
			}
		})
	}
}

// A tool that assigns to a standard package variable changes its own copy,
// not the host's.
func TestRunnersPackageVariablesAreCopies(t *testing.T) {
	src := `// Package clobber reassigns io.EOF.
package clobber

import (
	"context"
	"errors"
	"io"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (bool, error) {
	eof := &io.EOF
	*eof = errors.New("not EOF")
	return io.EOF.Error() == "not EOF", nil
}
`
	r := sandbox.NewInProcess(testOptions(t))
	defer r.Close()
	res, err := run(t, r, "clobber", src, `{}`)
	if err != nil || res.Output != "true" {
		t.Fatalf("got %q, %v", res.Output, err)
	}
	if got := ioEOF(); got != "EOF" {
		t.Fatalf("the host's io.EOF says %q", got)
	}
}

func TestInProcessStopsRunawayLoop(t *testing.T) {
	src := `// Package spin loops.
package spin

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	n := 0
	for {
		n++
	}
}
`
	opts := testOptions(t)
	opts.CallTimeout = 200 * time.Millisecond
	r := sandbox.NewInProcess(opts)
	defer r.Close()
	before := goroutines()
	_, err := run(t, r, "spin", src, `{}`)
	wantKind(t, err, adaptbot.FailTimeout, "200ms time limit")
	deadline := time.Now().Add(5 * time.Second)
	for goroutines() > before {
		if time.Now().After(deadline) {
			t.Fatalf("the interpreted loop still runs: %d goroutines, %d before", goroutines(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClosedRunners(t *testing.T) {
	for name, r := range runners(t, testOptions(t)) {
		t.Run(name, func(t *testing.T) {
			r.Close()
			_, err := run(t, r, "calculator", calculator, `{}`)
			wantKind(t, err, adaptbot.FailUnavailable, "closed")
		})
	}
}

// Every package on the allowlist loads in the interpreter.
func TestEveryAllowedImportLoads(t *testing.T) {
	uses := map[string]string{
		"bufio": "bufio.NewReader", "bytes": "bytes.Compare", "cmp": "cmp.Compare(1, 2)",
		"container/heap": "heap.Init", "container/list": "list.New", "context": "context.Background",
		"crypto/md5": "md5.Sum", "crypto/sha1": "sha1.Sum", "crypto/sha256": "sha256.Sum256",
		"crypto/sha512": "sha512.Sum512", "encoding/base64": "base64.StdEncoding", "encoding/csv": "csv.NewReader",
		"encoding/hex": "hex.EncodeToString", "encoding/json": "json.Marshal", "errors": "errors.New",
		"fmt": "fmt.Sprint", "hash/crc32": "crc32.ChecksumIEEE", "hash/fnv": "fnv.New32a", "html": "html.EscapeString",
		"io": "io.EOF", "math": "math.Sqrt", "math/big": "big.NewInt", "math/bits": "bits.Len",
		"math/cmplx": "cmplx.Abs", "math/rand": "rand.Intn", "net/url": "url.Parse", "path": "path.Join",
		"regexp": "regexp.MustCompile", "sort": "sort.Ints", "strconv": "strconv.Itoa", "strings": "strings.ToUpper",
		"sync": "new(sync.Mutex)", "sync/atomic": "atomic.AddInt64", "text/template": "template.New",
		"time": "time.Now", "unicode": "unicode.IsUpper", "unicode/utf16": "utf16.Encode",
		"unicode/utf8": "utf8.RuneLen", "adaptbot/toolkit": "toolkit.QueryEscape",
		"maps": "maps.Clone(map[string]int{})", "slices": "slices.Contains([]int{1}, 1)",
	}
	var imports, vars []string
	for _, p := range contract.AllowedImports() {
		use, ok := uses[p]
		if !ok {
			t.Fatalf("no use written for allowed package %q: add one", p)
		}
		imports = append(imports, fmt.Sprintf("\t%q", p))
		vars = append(vars, "\t_ = "+use)
	}
	src := fmt.Sprintf(`// Package everything imports every allowed package.
package everything

import (
%s
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	// Used in the body, where the interpreted generic packages (maps,
	// slices) are instantiated.
%s
	return template.HTMLEscapeString("<ok>") + strconv.Itoa(cmp.Compare(1, 2)), nil
}
`, strings.Join(imports, "\n"), strings.Join(vars, "\n"))
	r := sandbox.NewInProcess(testOptions(t))
	defer r.Close()
	res, err := run(t, r, "everything", src, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "&lt;ok&gt;-1" {
		t.Errorf("output %q", res.Output)
	}
}
