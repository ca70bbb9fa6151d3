package native

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"adaptbot/sandbox"
)

// The tiers side by side, on the work the native tier is for and on a light
// tool:
//
//	go test -run '^$' -bench . -benchtime 20x ./native/
//
// "interpreted" and "native" are whole calls through a pool of one worker
// (frames over pipes, JSON in and out); "go" is the same function called in
// this process, for IsMultiplyPrime's "within 3× of native Go".
func BenchmarkTiers(b *testing.B) {
	fib := Source{Tool: "fib", Code: readTool(b, filepath.Join("testdata", "fib", "fib.go"))}
	primes := Source{Tool: "primes", Code: readTool(b, filepath.Join("testdata", "primes", "primes.go"))}
	calc := Source{Tool: "calculator", Code: readTool(b, "../tools/calculator/calculator.go")}
	bin := sharedBinary(b, nativeTools(b)...)

	opts := sandboxOptions(b)
	// Room for the interpreter on a busy machine.
	opts.CallTimeout = time.Minute
	interp, err := sandbox.NewPool(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer interp.Close()
	opts.WorkerCommand, opts.WorkerEnv = []string{bin}, nil
	nat, err := sandbox.NewPool(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer nat.Close()

	for _, bc := range []struct {
		name  string
		src   Source
		input string
		want  string
		goFn  func()
	}{
		{"fib25", fib, `{"n":25}`, `{"fib":75025}`, func() { goFib(25) }},
		{"multiplyprime", primes, `{"from":1000,"to":1003}`, `{"count":1}`, func() { goCountMultiplyPrimes(1000, 1003) }},
		{"calculator", calc, `{"expression":"17 * 23 + 4"}`, `17 * 23 + 4 = 395`, nil},
	} {
		call := sandbox.Call{Tool: bc.src.Tool, Source: bc.src.Code, Input: json.RawMessage(bc.input)}
		for _, tier := range []struct {
			name string
			r    sandbox.Runner
		}{{"interpreted", interp}, {"native", nat}} {
			b.Run(bc.name+"/"+tier.name, func(b *testing.B) {
				// Warm: the worker has the tool loaded.
				if res, err := tier.r.Run(context.Background(), call); err != nil || res.Output != bc.want {
					b.Fatalf("%q, %v; want %q", res.Output, err, bc.want)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := tier.r.Run(context.Background(), call); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		if bc.goFn != nil {
			b.Run(bc.name+"/go", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					bc.goFn()
				}
			})
		}
	}
}

// goFib and goCountMultiplyPrimes are testdata/fib and testdata/primes,
// compiled into this test: native Go without a worker.
func goFib(n int) int {
	if n < 2 {
		return n
	}
	return goFib(n-1) + goFib(n-2)
}

func goCountMultiplyPrimes(from, to int) int {
	n := 0
	for a := from; a < to; a++ {
		if goIsMultiplyPrime(a) {
			n++
		}
	}
	return n
}

func goIsPrime(n int) bool {
	if n < 2 {
		return false
	}
	for i := 2; i*i <= n; i++ {
		if n%i == 0 {
			return false
		}
	}
	return true
}

func goIsMultiplyPrime(a int) bool {
	for i := 2; i < 101; i++ {
		if !goIsPrime(i) {
			continue
		}
		for j := 2; j < 101; j++ {
			if !goIsPrime(j) {
				continue
			}
			for k := 2; k < 101; k++ {
				if goIsPrime(k) && i*j*k == a {
					return true
				}
			}
		}
	}
	return false
}
