//go:build chaos

package chaos

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"adaptbot/benchmarks"
	"adaptbot/cluster"
)

// convergeLimit is how soon after a fault heals every replica must serve
// the digests of the last acknowledged changes.
const convergeLimit = 10 * time.Second

// TestFaults runs every fault, one at a time and then mixed, under load,
// and checks after each one heals what users rely on (see the package
// comment). CHAOS_SHORT=1 runs one round of each; CHAOS_REPORT=FILE writes
// the figures as JSON, one object per fault.
func TestFaults(t *testing.T) {
	short := os.Getenv("CHAOS_SHORT") != ""
	tm := timing{clients: 4, before: 2 * time.Second, post: 4 * time.Second, hold: 4 * time.Second}
	var plan []fault
	for range 3 {
		plan = append(plan, replicaKill, workerKill, natsPause, natsKill, partitionDrop, partitionStall)
	}
	plan = append(plan, mixed, mixed, mixed)
	if short {
		tm = timing{clients: 3, before: time.Second, post: 2 * time.Second, hold: 2 * time.Second}
		plan = []fault{replicaKill, workerKill, natsPause, natsKill, partitionStall, mixed}
	}
	began := time.Now()
	h := startCluster(t)
	t.Logf("cluster up in %v", time.Since(began).Round(time.Millisecond))
	defer func() {
		if t.Failed() {
			t.Logf("the replicas' logs end:%s", h.logs())
		}
	}()

	// Warm up: the counter tool exists, every replica has served a few
	// requests; then what each replica holds is the baseline of the leak
	// check.
	warm := newLoad(h, 2)
	if o := h.build(warm, 0, "create", counterTool); !o.answered() {
		t.Fatalf("the first build of %s: %d %s", counterTool, o.status, o.err)
	}
	warm.start()
	time.Sleep(3 * time.Second)
	warm.finish()
	if _, err := h.converge(time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.settle(time.Minute); err != nil {
		t.Fatal(err)
	}
	base := h.resources()

	var order []string
	byFault := map[string]*result{}
	for n, fl := range plan {
		res := h.round(fl, n, tm)
		t.Logf("%-12s sent %4d answered %4d refused %3d failed %3d 500s %d rows found %4d lost %d doubled %d converge %.2fs p99 %.0f/%.0f ms",
			res.Fault, res.Sent, res.Answered, res.Refused, res.Failed, res.Errors500, res.RowsFound, res.RowsLost, res.RowsDoubled, res.ConvergeS, res.P99During, res.P99After)
		if agg, ok := byFault[res.Fault]; ok {
			agg.add(res)
		} else {
			order = append(order, res.Fault)
			byFault[res.Fault] = &res
		}
		if t.Failed() {
			break
		}
	}

	// No replica keeps what the faults left: goroutines, open files, spool
	// files; and no request's row is in the stream twice.
	h.checkLeaks(base)
	// NATS runs as docs/cluster.md asks: no replica warns that it could
	// lose what it acknowledged.
	for _, r := range h.replicas {
		for _, line := range strings.Split(r.p.out.String(), "\n") {
			if strings.Contains(line, "fsyncs every") || strings.Contains(line, "fsync policy") || strings.Contains(line, `msg="cluster: stream `) {
				t.Errorf("%s warns: %s", r.id, line)
			}
		}
	}
	h.checkNoDoubles()

	var rows []result
	for _, name := range order {
		rows = append(rows, *byFault[name])
	}
	if path := os.Getenv("CHAOS_REPORT"); path != "" {
		if err := writeReport(path, rows); err != nil {
			t.Error(err)
		}
	}
	t.Logf("the suite took %v:\n%s", time.Since(began).Round(time.Second), table(rows))
}

// add folds another round of the same fault into r: counts add up, the
// slowest convergence and the highest p99 stand.
func (r *result) add(o result) {
	r.Sent += o.Sent
	r.Answered += o.Answered
	r.Refused += o.Refused
	r.Failed += o.Failed
	r.Errors500 += o.Errors500
	r.RowsFound += o.RowsFound
	r.RowsLost += o.RowsLost
	r.RowsDoubled += o.RowsDoubled
	r.ConvergeS = max(r.ConvergeS, o.ConvergeS)
	r.P99During = max(r.P99During, o.P99During)
	r.P99After = max(r.P99After, o.P99After)
}

// round runs one fault under load and checks the cluster once it heals.
func (h *harness) round(fl fault, n int, tm timing) result {
	t := h.t
	l := newLoad(h, tm.clients)
	f := &faultCtx{h: h, l: l, tm: tm, fault: fl.name, round: n}
	l.start()
	time.Sleep(tm.before)
	l.phase.Store(during)
	stopChanger := h.changer(l)
	// Failing runs on the replicas no fault kills (r1, r3): their failure
	// cases must be read through every replica afterwards.
	var failing []*outcome
	for _, r := range []int{0, 2} {
		failing = append(failing, l.post(r, "failing-run", "/api/tools/calculator/run",
			fmt.Sprintf(`{"expression": "chaos %s on %s ("}`, f.name(), h.replicas[r].id)))
	}
	for _, o := range failing {
		l.keep(o)
	}
	err := fl.run(f)
	stopChanger()
	if err != nil {
		l.finish()
		t.Fatalf("%s: %v", f.name(), err)
	}
	l.phase.Store(after)
	conv, cerr := h.converge(f.healed, time.Minute)
	if rest := tm.post - time.Since(f.healed); rest > 0 {
		time.Sleep(rest)
	}
	outs := l.finish()
	if cerr != nil {
		t.Errorf("%s: %v", f.name(), cerr)
	} else if conv > convergeLimit.Seconds() {
		t.Errorf("%s: the replicas served the same digests %.1f s after healing, past %v", f.name(), conv, convergeLimit)
	}
	if err := h.settle(time.Minute); err != nil {
		t.Errorf("%s: %v", f.name(), err)
	}
	res := h.judge(f, outs, conv)
	// Nothing the fault left blocks a change: a modify through each
	// replica is accepted (a lock left behind would refuse it for ten
	// minutes), and every replica serves it.
	after := newLoad(h, 1)
	for i := range h.replicas {
		op := "modify"
		if h.expected()[counterTool] == "" {
			op = "create"
		}
		if o := h.build(after, i, op, counterTool); !o.answered() {
			t.Errorf("%s: a %s through %s after healing: %d %s", f.name(), op, h.replicas[i].id, o.status, o.err)
		}
		if _, err := h.converge(time.Now(), convergeLimit); err != nil {
			t.Errorf("%s: after healing: %v", f.name(), err)
		}
	}
	for _, note := range f.notes {
		t.Logf("%s: %s", f.name(), note)
	}
	h.checkTraces(f, outs)
	h.checkFailureCases(f, failing)
	h.checkActs(f)
	if f.hand != "" {
		h.checkPartition(f)
	}
	return res
}

// converge waits until every replica serves, of every tool the suite
// changed, the digest of the last acknowledged change; it returns the
// seconds since from.
func (h *harness) converge(from time.Time, limit time.Duration) (float64, error) {
	deadline := time.Now().Add(limit)
	for {
		want := h.expected()
		var off []string
		for tool, d := range want {
			for i := range h.replicas {
				got, err := h.digest(i, tool)
				if err != nil || got != d {
					off = append(off, fmt.Sprintf("%s serves %s at %.12s (want %.12s; %v)", h.replicas[i].id, tool, got, d, err))
				}
			}
		}
		if len(off) == 0 {
			return time.Since(from).Seconds(), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the replicas do not converge within %v: %s", limit, strings.Join(off, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settle waits until every replica is connected to NATS with its spools
// empty.
func (h *harness) settle(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var off []string
		for i, r := range h.replicas {
			hl, err := h.health(i)
			switch {
			case err != nil:
				off = append(off, fmt.Sprintf("%s: %v", r.id, err))
			case !hl.Cluster.Connected || hl.Cluster.Spooled > 0 || hl.Cluster.SpooledTraces > 0:
				off = append(off, fmt.Sprintf("%s: connected %v, %d rows and %d traces spooled", r.id, hl.Cluster.Connected, hl.Cluster.Spooled, hl.Cluster.SpooledTraces))
			}
		}
		if len(off) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the spools do not empty within %v: %s", limit, strings.Join(off, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// rows counts the stream's rows by request ID.
func (h *harness) rows() (map[string]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	byID := map[string]int{}
	_, err := cluster.ReadRows(ctx, h.direct, func(r benchmarks.Row) { byID[r.RequestID]++ })
	return byID, err
}

// judge counts a round's outcomes and checks them: every answered request
// has exactly one row; a request that was not answered got a clear error
// (a body naming its request, Retry-After on a 503), unless the replica
// answering it was killed; nothing answered 500 or hung.
func (h *harness) judge(f *faultCtx, outs []*outcome, conv float64) result {
	t := h.t
	res := result{Fault: f.fault, Sent: len(outs), ConvergeS: conv, P99During: p99(outs, during), P99After: p99(outs, after)}
	byID, err := h.rows()
	if err != nil {
		t.Errorf("%s: read the rows: %v", f.name(), err)
	}
	killed := map[int]bool{}
	for _, r := range f.killed {
		killed[r] = true
	}
	var bad []string
	lostToWorker, unstarted := 0, 0
	for _, o := range outs {
		n := byID[o.id]
		switch {
		case o.answered():
			res.Answered++
			switch {
			case n == 0:
				res.RowsLost++
				bad = append(bad, fmt.Sprintf("%s %s on %s answered without a row", o.kind, o.id, h.replicas[o.replica].id))
			case n > 1:
				res.RowsDoubled++
			default:
				res.RowsFound++
			}
			continue
		case o.status == 200:
			// A build's result that says no (a tool of that name exists
			// already, here where another replica's delete has not
			// arrived yet): a clear answer, and a change of nothing.
			res.Refused++
		case o.status != 0 && o.status != 500 && o.bodyID && (o.status != 503 || o.retryAfter):
			res.Refused++
		default:
			res.Failed++
			if res.Failed <= 5 {
				t.Logf("%s: failed: %s %s on %s: %d %s", f.name(), o.kind, o.id, h.replicas[o.replica].id, o.status, o.err)
			}
		}
		if o.id != "" && n > 1 {
			res.RowsDoubled++
		}
		if o.status == 500 {
			res.Errors500++
		}
		switch {
		case o.hang:
			bad = append(bad, fmt.Sprintf("%s on %s hung past %v", o.kind, h.replicas[o.replica].id, deadline))
		case o.status == 0 && killed[o.replica]:
			// Cut off by the kill of its replica.
		case o.status == 0:
			bad = append(bad, fmt.Sprintf("%s on %s: no answer: %s", o.kind, h.replicas[o.replica].id, o.err))
		case o.status == 200:
		case !o.bodyID:
			bad = append(bad, fmt.Sprintf("%s on %s: %d without a body naming request %q: %s", o.kind, h.replicas[o.replica].id, o.status, o.id, o.err))
		case o.status == 503 && !o.retryAfter:
			bad = append(bad, fmt.Sprintf("%s on %s: 503 without Retry-After: %s", o.kind, h.replicas[o.replica].id, o.err))
		case o.status == 500:
			bad = append(bad, fmt.Sprintf("%s %s on %s: 500: %s", o.kind, o.id, h.replicas[o.replica].id, o.err))
		case f.killedWorker && len(f.killed) == 0 && o.kind != "failing-run":
			// A worker's death costs the calls it was running, and
			// nothing else: the fleet replica's requests whose call was
			// there fail with 503, saying the worker died.
			// A change sent to a replica that has not applied the one
			// before yet is refused (404, 409) whatever the fault: the
			// replicas converge, they are not one.
			switch {
			case o.replica == fleetReplica && o.status == 503 && strings.Contains(o.err, "no fleet worker answered"):
				switch {
				case o.token != "" && h.witness.count(o.token) > 0:
					lostToWorker++ // it acted: it was running there
				case o.token != "" || o.began.After(f.workerKilledAt.Add(-time.Second)):
					// Sent to the worker in the instant it died (a call of
					// the calculator runs in milliseconds): lost before it
					// started, or before the worker could answer busy.
					unstarted++
				default:
					bad = append(bad, fmt.Sprintf("%s %s on %s, sent %v before the worker died, was lost with it: it waited there", o.kind, o.id, h.replicas[o.replica].id, f.workerKilledAt.Sub(o.began).Round(time.Millisecond)))
				}
			case o.replica == fleetReplica && o.status == 503 && strings.Contains(o.err, "every fleet worker was busy") &&
				o.began.After(f.workerKilledAt.Add(-time.Second)):
				// Sent in the instant the worker died, while its pool was
				// full: its "busy" was the last answer the replica heard,
				// and the call never started (the words blame load, not the
				// death: see docs/cluster.md).
				unstarted++
			case strings.HasPrefix(o.kind, "change-") && (o.status == 404 || o.status == 409):
			default:
				bad = append(bad, fmt.Sprintf("%s on %s failed while only a worker died: %d %s", o.kind, h.replicas[o.replica].id, o.status, o.err))
			}
		}
	}
	if lostToWorker > 2 {
		// Its pool runs two calls at once, and it takes no more.
		bad = append(bad, fmt.Sprintf("%d acting calls that ran on the killed worker failed; it ran at most 2", lostToWorker))
	}
	if f.killedWorker {
		f.note("%d acting calls running on the killed worker failed, and %d calls sent to it as it died", lostToWorker, unstarted)
	}
	for _, id := range f.lastAnswers {
		if byID[id] != 1 {
			bad = append(bad, fmt.Sprintf("request %s, answered right before its replica was killed, has %d rows", id, byID[id]))
		} else {
			f.note("request %s, answered right before its replica was killed, has its row", id)
		}
	}
	slowest := slices.SortedFunc(slices.Values(outs), func(a, b *outcome) int { return cmp.Compare(b.latency, a.latency) })
	for _, o := range slowest[:min(3, len(slowest))] {
		t.Logf("%s: slow: %s on %s took %v: %d %s", f.name(), o.kind, h.replicas[o.replica].id, o.latency.Round(time.Millisecond), o.status, clip(o.err))
	}
	if res.RowsDoubled > 0 {
		bad = append(bad, fmt.Sprintf("%d requests have more than one row", res.RowsDoubled))
	}
	for i, b := range bad {
		if i == 20 {
			t.Errorf("%s: and %d more", f.name(), len(bad)-20)
			break
		}
		t.Errorf("%s: %s", f.name(), b)
	}
	return res
}

// checkTraces reads, through another replica, the traces of a few
// requests answered during the fault.
func (h *harness) checkTraces(f *faultCtx, outs []*outcome) {
	per := map[int]int{}
	for _, o := range outs {
		if !o.answered() || o.phase != during || o.id == "" || (o.kind != "chat" && o.kind != "run") || per[o.replica] >= 3 {
			continue
		}
		per[o.replica]++
		other := (o.replica + 1) % len(h.replicas)
		if err := h.until(30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			code, err := getJSON(ctx, h.replicas[other].URL()+"/api/requests/"+o.id, nil)
			if err == nil && code != 200 {
				err = fmt.Errorf("GET /api/requests/%s = %d", o.id, code)
			}
			return err
		}); err != nil {
			h.t.Errorf("%s: the trace of %s %s (answered by %s) through %s: %v", f.name(), o.kind, o.id, h.replicas[o.replica].id, h.replicas[other].id, err)
		}
	}
}

// checkFailureCases reads each failing run's case through every replica.
func (h *harness) checkFailureCases(f *faultCtx, failing []*outcome) {
	for _, o := range failing {
		if o.id == "" || o.status == 0 {
			h.t.Errorf("%s: a failing run on %s got no answer: %s", f.name(), h.replicas[o.replica].id, o.err)
			continue
		}
		for i, r := range h.replicas {
			err := h.until(30*time.Second, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var rep struct {
					Cases []struct {
						RequestID string `json:"request_id"`
					} `json:"cases"`
				}
				if code, err := getJSON(ctx, h.replicas[i].URL()+"/api/tools/calculator/failures", &rep); err != nil || code != 200 {
					return fmt.Errorf("GET failures = %d, %v", code, err)
				}
				for _, c := range rep.Cases {
					if c.RequestID == o.id {
						return nil
					}
				}
				return fmt.Errorf("no case of request %s among %d", o.id, len(rep.Cases))
			})
			if err != nil {
				h.t.Errorf("%s: the failure case of a run on %s, through %s: %v", f.name(), h.replicas[o.replica].id, r.id, err)
			}
		}
	}
}

// checkActs checks that no acting call acted twice, and that the fault's
// own calls each acted once, failing with a clear error at most.
func (h *harness) checkActs(f *faultCtx) {
	if twice := h.witness.twice(); len(twice) > 0 {
		h.t.Errorf("%s: acting calls acted more than once: %v", f.name(), twice)
	}
	failed := 0
	for _, o := range f.acts {
		if !o.answered() {
			failed++
		}
	}
	if f.killedWorker {
		f.note("%d of the %d acting calls the fault started failed as their worker died; each acted once", failed, len(f.acts))
	}
}

// checkPartition checks the partition's rule: the edit made on the replica
// cut off stays in its history when the other replica's change won.
func (h *harness) checkPartition(f *faultCtx) {
	if h.expected()[partTool] == f.hand {
		return // r2's change was refused: the hand edit won, and converge checked it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var vs struct {
		Versions []struct {
			SHA256 string `json:"sha256"`
		} `json:"versions"`
	}
	if code, err := getJSON(ctx, h.replicas[0].URL()+"/api/tools/"+partTool+"/versions", &vs); err != nil || code != 200 {
		h.t.Errorf("%s: r1's versions of %s: %d %v", f.name(), partTool, code, err)
		return
	}
	for _, v := range vs.Versions {
		if v.SHA256 == f.hand {
			return
		}
	}
	h.t.Errorf("%s: r1's hand edit of %s lost to r2's change, and is not in r1's history", f.name(), partTool)
}

// until retries fn every 200 ms until it succeeds or limit passes.
func (h *harness) until(limit time.Duration, fn func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// resource is what a replica holds at one moment.
type resource struct {
	goroutines, fds int
}

// resources reads each replica's goroutines (its /metrics) and open files
// (/proc), once the suite's own idle connections are closed.
func (h *harness) resources() []resource {
	h.client.CloseIdleConnections()
	time.Sleep(time.Second)
	out := make([]resource, len(h.replicas))
	for i, r := range h.replicas {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out[i].goroutines = goroutines(ctx, r.URL())
		cancel()
		n, err := openFDs(r.p.pid())
		if err != nil {
			h.t.Errorf("%s: open files: %v", r.id, err)
		}
		out[i].fds = n
	}
	return out
}

// goroutines is go_goroutines from a replica's /metrics, or -1.
func goroutines(ctx context.Context, url string) int {
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	return -1
}

// checkLeaks compares each replica with the baseline: a replica may hold a
// few more goroutines and files than at the start (a reconnected watch, a
// pool's worker), not more with every fault; and its spools hold no file.
func (h *harness) checkLeaks(base []resource) {
	if err := h.settle(time.Minute); err != nil {
		h.t.Error(err)
	}
	now := h.resources()
	for i, r := range h.replicas {
		b, n := base[i], now[i]
		h.t.Logf("%s: goroutines %d → %d, open files %d → %d (restarted %d times)", r.id, b.goroutines, n.goroutines, b.fds, n.fds, r.starts-1)
		if n.goroutines < 0 || n.goroutines > b.goroutines+b.goroutines/5+20 {
			h.t.Errorf("%s: %d goroutines after the faults, %d before", r.id, n.goroutines, b.goroutines)
		}
		if n.fds > b.fds+b.fds/5+10 {
			h.t.Errorf("%s: %d open files after the faults, %d before", r.id, n.fds, b.fds)
		}
		for _, spool := range []string{"nats-spool", "nats-spool-traces"} {
			ents, _ := os.ReadDir(filepath.Join(r.dir, "benchmarks", spool))
			for _, e := range ents {
				h.t.Errorf("%s: %s holds %s after the faults", r.id, spool, e.Name())
			}
		}
	}
}

// checkNoDoubles checks the whole stream: no request has two rows.
func (h *harness) checkNoDoubles() {
	byID, err := h.rows()
	if err != nil {
		h.t.Error(err)
		return
	}
	n := 0
	for id, k := range byID {
		if k > 1 {
			if n++; n <= 10 {
				h.t.Errorf("request %s has %d rows in %s", id, k, cluster.RowStream)
			}
		}
	}
	h.t.Logf("%s holds %d requests' rows, %d of them more than once", cluster.RowStream, len(byID), n)
}

// writeReport writes the figures as JSON, one object per fault.
func writeReport(path string, rows []result) error {
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// table is the figures as the Markdown table of docs/cluster.md.
func table(rows []result) string {
	var b strings.Builder
	b.WriteString("| fault | sent | answered | refused | failed | 500s | rows found | lost | doubled | converge s | p99 ms during | p99 ms after |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %.1f | %.0f | %.0f |\n", r.Fault, r.Sent, r.Answered, r.Refused, r.Failed,
			r.Errors500, r.RowsFound, r.RowsLost, r.RowsDoubled, r.ConvergeS, r.P99During, r.P99After)
	}
	return b.String()
}
