package egress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"adaptbot/egress"
	"adaptbot/identity"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// timer sends the same GET n times through toolkit.Do and returns how long
// each took, as the tool sees it.
var timer = tool{name: "timer", src: `// Package timer times its requests.
package timer

import (
	"context"
	"time"

	"adaptbot/toolkit"
)

const Hosts = "api.example.com"

type Input struct {
	URL    string ` + "`json:\"url\"`" + `
	Header map[string]string ` + "`json:\"header\"`" + `
	N      int    ` + "`json:\"n\"`" + `
}

func Execute(ctx context.Context, in Input) ([]int64, error) {
	out := make([]int64, 0, in.N)
	for i := 0; i < in.N; i++ {
		start := time.Now()
		resp, err := toolkit.Do(ctx, toolkit.Request{URL: in.URL, Header: in.Header})
		if err != nil {
			return nil, err
		}
		if resp.Status != 200 {
			return nil, nil
		}
		out = append(out, int64(time.Since(start)))
	}
	return out, nil
}
`}

// BenchmarkDo measures, side by side, one GET to a loopback HTTPS server
// sent straight from the server's process (toolkit.Client.Send) and the
// same GET sent by an interpreted tool in a worker through toolkit.Do (the
// pipe to the server, the egress rules, the send, the pipe back), with and
// without a secret to put in and mask. It reports each one's p50 and p90
// and the p50 that Do adds (issue 37: at most 1 ms).
func BenchmarkDo(b *testing.B) {
	w := newWorld(b, map[string]http.HandlerFunc{"api": func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprint(rw, `{"ok":true}`)
	}}, "api").workers(b)
	w.set(b, alice, "TOKEN", "bench-token-12345", false, "api.example.com")
	target := w.sites["api"].base() + "/ping"
	ctx := identity.With(context.Background(), alice)
	const batch = 50

	var direct, plain, secret []time.Duration
	through := func(header map[string]string) []time.Duration {
		in, _ := json.Marshal(map[string]any{"url": target, "header": header, "n": batch})
		res, err := w.pool.Run(egress.Bind(ctx, w.host, timer.egress(b)), sandbox.Call{Tool: timer.name, Source: []byte(timer.src), Input: in})
		if err != nil {
			b.Fatal(err)
		}
		var ns []int64
		if err := json.Unmarshal([]byte(res.Output), &ns); err != nil || len(ns) != batch {
			b.Fatalf("the tool said %q", res.Output)
		}
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n)
		}
		return out
	}
	through(nil) // warm: the tool compiled, the connections open
	for b.Loop() {
		for i := 0; i < batch; i++ {
			start := time.Now()
			resp, err := w.client.Send(ctx, toolkit.Request{Method: "GET", URL: target}, nil)
			if err != nil || resp.Status != 200 {
				b.Fatal(resp, err)
			}
			direct = append(direct, time.Since(start))
		}
		plain = append(plain, through(nil)...)
		secret = append(secret, through(map[string]string{"Authorization": "Bearer {{secret:TOKEN}}"})...)
	}
	d, p, s := pct(direct, 50), pct(plain, 50), pct(secret, 50)
	b.ReportMetric(float64(d.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(pct(direct, 90).Microseconds()), "direct-p90-µs")
	b.ReportMetric(float64(p.Microseconds()), "do-p50-µs")
	b.ReportMetric(float64(pct(plain, 90).Microseconds()), "do-p90-µs")
	b.ReportMetric(float64(s.Microseconds()), "do-secret-p50-µs")
	b.ReportMetric(float64((p - d).Microseconds()), "added-p50-µs")
	b.ReportMetric(float64((s - d).Microseconds()), "added-secret-p50-µs")
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[(len(s)-1)*p/100]
}
