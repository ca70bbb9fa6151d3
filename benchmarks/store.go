package benchmarks

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"adaptbot"
)

// Store keeps the aggregates of the benchmark rows in memory, so the
// dashboard and /api/benchmarks answer any filter without reading the file
// again. It is fed one row at a time (Add): at start-up from the file, in one
// streaming pass (LoadFile), then by the Logger as it writes each row (see
// Logger.SetSink). It is safe for concurrent use.
//
// Memory is bounded whatever the number of rows. Rows are counted in cells,
// one per time bucket and per kind of row (intent, category, tools that ran,
// outcome); each cell holds counters and a fixed-size latency histogram
// (see MaxQuantileError). Three tiers of time buckets keep both the recent
// past precise and any span short:
//
//   - 1-minute buckets for the latest 6 hours and 10 minutes,
//   - 1-hour buckets for the latest 7 days and 2 hours,
//   - buckets covering all rows, at most 128 of them, whose width grows
//     (1, 5, 10, 30 minutes, 1, 3, 6, 12 hours, 1, 2, 4… days) whenever the
//     rows span more.
//
// A query uses the finest tier that holds every row since Filter.Since, so a
// time range is applied to the width of that tier's buckets (Summary.BucketSec).
// Besides the cells, the Store keeps the latest RecentRows rows, shortened, for
// the table of recent requests.
type Store struct {
	mu      sync.RWMutex
	kinds   []kind
	kindOf  map[kindKey]int32
	tiers   []*tier
	undated *bucket        // rows without a timestamp, in no tier
	steps   []string       // step names by index, at most maxSteps
	stepOf  map[string]int // index of each step name
	allTime []*cell        // every row, by kind
	recent  []Recent
	next    int // where the next recent row goes once the ring is full
	rows    int
}

// RecentRows is how many of the latest rows a Store keeps for the table of
// recent requests.
const RecentRows = 1000

// kindKey is what a filter other than time can tell apart.
type kindKey struct {
	intent, category, tools string
	outcome                 string // OutcomeOK, OutcomeError or OutcomeNotConfigured
	user                    string // the caller's pseudonym
}

type kind struct {
	kindKey
	toolList []string // the tools that ran (see toolsOf)
}

// tier is a set of time buckets of one width; fixed tiers keep the latest
// keep buckets, the growing tier keeps every row in at most keep buckets.
type tier struct {
	width    int64 // minutes
	keep     int64
	grows    bool
	buckets  map[int64]*bucket
	low, top int64 // the lowest and highest bucket key held, once seen
	seen     bool
}

type bucket struct {
	cells    []*cell                             // by kind; nil where the bucket has no row of that kind
	byIntent [len(outcomes) * len(intents)]*cell // by intent and outcome (see intentIndex), for the series
	feedback *cell                               // every FEEDBACK row, for the series; they are not requests
}

// cell aggregates the rows of one kind in one time bucket.
type cell struct {
	n int64
	// first and last are the earliest and latest timestamps counted, so a
	// filtered query's range is that of the rows it selects, not of their
	// buckets.
	first, last      time.Time
	latency          histogram
	latencySum       time.Duration
	llmCalls         int64
	promptTokens     int64
	completionTokens int64
	discovery        int64
	paramOK, paramN  int64
	execOK, execN    int64
	generation       *histogram             // builds only
	attempts         [maxAttempts + 1]int64 // builds that write code, by their attempts
	plans            int64                  // BUILD rows that only planned a build
	errors           map[string]int64       // at most errorsPerCell messages
	otherErrors      int64                  // errors past that
	steps            [maxSteps]stepAcc      // by the Store's step index
	up, down         int64                  // FEEDBACK rows: thumbs up and down
	tiers            [len(tierNames)]int64  // rows by the tier that ran their tools
}

// tierNames are the tiers a cell counts rows of, by index.
var tierNames = [...]string{TierInterpreted, TierNative, TierMixed}

// stepAcc sums the times of one step of the flow (node_times).
type stepAcc struct {
	n   int64
	sum time.Duration
}

// maxSteps bounds the distinct step names a Store tells apart; later names
// count under the last, otherStep.
const maxSteps = 16

// otherStep names the steps past the first maxSteps-1 names.
const otherStep = "(other steps)"

// maxAttempts is the largest build attempt count kept apart; more count as it.
const maxAttempts = 9

// errorsPerCell bounds the distinct error messages a cell counts.
const errorsPerCell = 8

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{
		kindOf: map[kindKey]int32{},
		tiers: []*tier{
			{width: 1, keep: 6*60 + 10},
			{width: 60, keep: 7*24 + 2}, // + 2: "since=7d" falls inside it
			{width: 1, keep: 128, grows: true},
		},
		undated: newBucket(),
	}
}

func newBucket() *bucket { return &bucket{} }

// LoadFile builds a Store from the file at path in one streaming pass. A
// missing file gives an empty Store. Bad lines are skipped and reported with
// a *BadLinesError that comes with the Store, as ReadFile does.
func LoadFile(path string) (*Store, error) {
	s := NewStore()
	f, err := os.Open(path)
	if err != nil {
		if isNotExist(err) {
			return s, nil
		}
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	defer f.Close()
	err = Scan(f, func(r Row) error {
		s.Add(r)
		return nil
	})
	if bad, ok := err.(*BadLinesError); ok {
		bad.Path = path
		return s, bad
	}
	if err != nil {
		return nil, fmt.Errorf("%w (reading %s)", err, path)
	}
	return s, nil
}

// Add counts one row.
func (s *Store) Add(r Row) {
	r.Intent = strings.ToUpper(strings.TrimSpace(r.Intent)) // as Filter reads it
	outcome := r.Outcome()
	key := kindKey{intent: r.Intent, category: r.Category, tools: strings.Join(r.Tools, ";"), outcome: outcome, user: r.User}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kindOf[key]
	if !ok {
		k = int32(len(s.kinds))
		s.kinds = append(s.kinds, kind{kindKey: key, toolList: slices.Clone(toolsOf(r.Category, r.Tools))})
		s.kindOf[key] = k
	}
	s.rows++
	if int(k) >= len(s.allTime) {
		s.allTime = append(s.allTime, &cell{})
	}
	cr := count(r)
	for _, nt := range r.NodeTimes {
		cr.steps = append(cr.steps, s.stepIndex(nt.Node))
	}
	s.allTime[k].add(cr)
	feedback := r.Intent == adaptbot.IntentFeedback
	if r.Timestamp.IsZero() {
		s.undated.cell(k).add(cr)
	} else {
		minute := r.Timestamp.Unix() / 60
		for _, t := range s.tiers {
			if b := t.bucketFor(minute); b != nil {
				b.cell(k).add(cr)
				if feedback {
					b.feedbackCell().add(cr)
				} else {
					b.intentCell(r.Intent, outcome).add(cr)
				}
			}
		}
	}
	if feedback {
		s.rate(r.RatedRequest, r.Score)
	} else {
		s.remember(r)
	}
}

func (b *bucket) feedbackCell() *cell {
	if b.feedback == nil {
		b.feedback = &cell{}
	}
	return b.feedback
}

func (b *bucket) cell(k int32) *cell {
	if int(k) >= len(b.cells) {
		b.cells = append(b.cells, make([]*cell, int(k)+1-len(b.cells))...)
	}
	c := b.cells[k]
	if c == nil {
		c = &cell{}
		b.cells[k] = c
	}
	return c
}

// stepIndex interns a step name.
func (s *Store) stepIndex(name string) int {
	if i, ok := s.stepOf[name]; ok {
		return i
	}
	if len(s.steps) >= maxSteps-1 {
		name = otherStep
		if i, ok := s.stepOf[name]; ok {
			return i
		}
	}
	if s.stepOf == nil {
		s.stepOf = map[string]int{}
	}
	s.stepOf[name] = len(s.steps)
	s.steps = append(s.steps, strings.Clone(name))
	return len(s.steps) - 1
}

// intents are the intents a bucket keeps totals for; "" stands for any other.
var intents = [...]string{adaptbot.IntentChat, adaptbot.IntentBuild, adaptbot.IntentRun, ""}

// outcomes are the outcomes a bucket keeps totals for.
var outcomes = [...]string{OutcomeOK, OutcomeError, OutcomeNotConfigured}

func intentIndex(intent, outcome string) int {
	i := len(intents) - 1
	for j, in := range intents[:len(intents)-1] {
		if intent == in {
			i = j
		}
	}
	for j, o := range outcomes {
		if outcome == o {
			i += j * len(intents)
		}
	}
	return i
}

// intentOf is the inverse of intentIndex.
func intentOf(i int) (intent, outcome string) {
	return intents[i%len(intents)], outcomes[i/len(intents)]
}

func (b *bucket) intentCell(intent, outcome string) *cell {
	i := intentIndex(intent, outcome)
	if b.byIntent[i] == nil {
		b.byIntent[i] = &cell{}
	}
	return b.byIntent[i]
}

func (c *cell) saw(t time.Time) {
	if c.first.IsZero() || t.Before(c.first) {
		c.first = t
	}
	if t.After(c.last) {
		c.last = t
	}
}

// writesCode says whether a BUILD row of category has the model write a
// tool's code, and so has build attempts to count (an older file's row
// without a category may). A delete, a rollback, an approval, a test, an
// import or a skill's proposal writes none.
func writesCode(category string) bool {
	return category == adaptbot.CategoryBuildCreate || category == adaptbot.CategoryBuildModify || category == ""
}

// counted is a row with what every cell it goes into needs worked out once.
type counted struct {
	Row
	latency, generation uint8  // histogram buckets
	errorKey            string // errorKey(Error)
	steps               []int  // the step index of each NodeTimes entry
}

func count(r Row) *counted {
	r.Latency = max(r.Latency, 0)
	r.GenerationTime = max(r.GenerationTime, 0)
	c := &counted{Row: r, latency: uint8(histIndex(r.Latency)), generation: uint8(histIndex(r.GenerationTime))}
	if r.Error != "" {
		c.errorKey = errorKey(r.Error)
	}
	return c
}

func (c *cell) add(r *counted) {
	c.n++
	if !r.Timestamp.IsZero() {
		c.saw(r.Timestamp)
	}
	c.latency.addAt(r.Latency, r.latency)
	c.latencySum += r.Latency
	c.llmCalls += int64(r.LLMCalls)
	c.promptTokens += int64(r.PromptTokens)
	c.completionTokens += int64(r.CompletionTokens)
	c.discovery += int64(r.DiscoveryRequests)
	switch r.ParamExtraction {
	case True:
		c.paramOK++
		c.paramN++
	case False:
		c.paramN++
	}
	switch r.ToolExecution {
	case True:
		c.execOK++
		c.execN++
	case False:
		c.execN++
	}
	if r.Intent == adaptbot.IntentBuild {
		if c.generation == nil {
			c.generation = &histogram{}
		}
		if r.GenerationTime > 0 {
			c.generation.addAt(r.GenerationTime, r.generation)
		}
		switch {
		case r.Category == adaptbot.CategoryBuildPlan:
			// A plan asks the model what a build would do and builds
			// nothing: it is counted apart from builds.
			c.plans++
		case r.BuildAttempts > 0 || writesCode(r.Category):
			c.attempts[min(max(r.BuildAttempts, 0), maxAttempts)]++
		}
	}
	for i, nt := range r.NodeTimes {
		c.steps[r.steps[i]].n++
		c.steps[r.steps[i]].sum += nt.Duration
	}
	if i := slices.Index(tierNames[:], r.Tier); i >= 0 {
		c.tiers[i]++
	}
	if r.Intent == adaptbot.IntentFeedback {
		switch {
		case r.Score > 0:
			c.up++
		case r.Score < 0:
			c.down++
		}
	}
	if r.errorKey != "" {
		if _, ok := c.errors[r.errorKey]; ok || len(c.errors) < errorsPerCell {
			if c.errors == nil {
				c.errors = map[string]int64{}
			}
			c.errors[r.errorKey]++
		} else {
			c.otherErrors++
		}
	}
}

// bucketFor returns the bucket for a row at minute, making room for it, or
// nil when a fixed tier no longer keeps that time.
func (t *tier) bucketFor(minute int64) *bucket {
	if t.buckets == nil {
		t.buckets = map[int64]*bucket{}
	}
	key := floorDiv(minute, t.width)
	switch {
	case !t.seen:
		t.low, t.top, t.seen = key, key, true
	case t.grows:
		for max(t.top, key)-min(t.low, key) >= t.keep {
			t.widen()
			key = floorDiv(minute, t.width)
		}
		t.low, t.top = min(t.low, key), max(t.top, key)
	case key > t.top:
		t.top = key
		if low := t.top - t.keep + 1; low > t.low {
			if low-t.low <= int64(len(t.buckets)) {
				// Usually one step: delete the few keys that fell out, rather
				// than walk the whole map on every new minute.
				for k := t.low; k < low; k++ {
					delete(t.buckets, k)
				}
			} else {
				for k := range t.buckets {
					if k < low {
						delete(t.buckets, k)
					}
				}
			}
			t.low = low
		}
	case key < t.top-t.keep+1:
		return nil // older than this tier keeps
	default:
		t.low = min(t.low, key)
	}
	b := t.buckets[key]
	if b == nil {
		b = newBucket()
		t.buckets[key] = b
	}
	return b
}

// widths are the bucket widths of the all-rows tier, in minutes, each a
// multiple of the one before, so buckets merge exactly and line up with the
// hours and days analysts group by (DuckDB's date_trunc, pandas' resample).
var widths = []int64{1, 5, 10, 30, 60, 180, 360, 720, 1440}

// nextWidth is the width after w: the next of widths, then doubling days.
func nextWidth(w int64) int64 {
	for _, n := range widths {
		if n > w {
			return n
		}
	}
	return 2 * w
}

// widen widens the buckets to the next width, merging those that fall
// into one.
func (t *tier) widen() {
	old := t.width
	t.width = nextWidth(old)
	rekey := func(k int64) int64 { return floorDiv(k*old, t.width) }
	merged := make(map[int64]*bucket, len(t.buckets)/2+1)
	for k, b := range t.buckets {
		nk := rekey(k)
		if into := merged[nk]; into != nil {
			into.merge(b)
		} else {
			merged[nk] = b
		}
	}
	t.buckets = merged
	t.low, t.top = rekey(t.low), rekey(t.top)
}

func (b *bucket) merge(o *bucket) {
	for k, c := range o.cells {
		if c != nil {
			b.cell(int32(k)).merge(c)
		}
	}
	for i, c := range o.byIntent {
		if c != nil {
			intent, outcome := intentOf(i)
			b.intentCell(intent, outcome).merge(c)
		}
	}
	if o.feedback != nil {
		b.feedbackCell().merge(o.feedback)
	}
}

func (c *cell) merge(o *cell) {
	c.n += o.n
	c.plans += o.plans
	if !o.first.IsZero() {
		c.saw(o.first)
		c.saw(o.last)
	}
	for i := range o.steps {
		c.steps[i].n += o.steps[i].n
		c.steps[i].sum += o.steps[i].sum
	}
	c.latency.merge(&o.latency)
	c.latencySum += o.latencySum
	c.llmCalls += o.llmCalls
	c.promptTokens += o.promptTokens
	c.completionTokens += o.completionTokens
	c.discovery += o.discovery
	c.paramOK += o.paramOK
	c.paramN += o.paramN
	c.execOK += o.execOK
	c.execN += o.execN
	c.up += o.up
	c.down += o.down
	for i, n := range o.tiers {
		c.tiers[i] += n
	}
	if o.generation != nil {
		if c.generation == nil {
			c.generation = &histogram{}
		}
		c.generation.merge(o.generation)
	}
	for i, n := range o.attempts {
		c.attempts[i] += n
	}
	for msg, n := range o.errors {
		if _, ok := c.errors[msg]; ok || len(c.errors) < errorsPerCell {
			if c.errors == nil {
				c.errors = map[string]int64{}
			}
			c.errors[msg] += n
		} else {
			c.otherErrors += n
		}
	}
	c.otherErrors += o.otherErrors
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// remember keeps r, shortened, in the ring of recent rows.
func (s *Store) remember(r Row) {
	rec := Recent{
		Timestamp: r.Timestamp, RequestID: r.RequestID, Intent: r.Intent, Path: r.Category,
		Tools: slices.Clone(r.Tools), LatencySec: round(r.Latency.Seconds()),
		Error: Cut(errorKey(r.Error), 200), Query: Cut(r.Query, 200), Outcome: r.Outcome(), User: r.User,
	}
	if len(s.recent) < RecentRows {
		s.recent = append(s.recent, rec)
		return
	}
	s.recent[s.next] = rec
	s.next = (s.next + 1) % RecentRows
}

// rate marks the recent row of request id with a person's score, when the
// ring still holds it.
func (s *Store) rate(id string, score int) {
	if id == "" {
		return
	}
	for i := range s.recent {
		if s.recent[i].RequestID == id {
			s.recent[i].Feedback = score
		}
	}
}

// Rows returns how many rows the Store has counted.
func (s *Store) Rows() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rows
}

// sortedKeys returns the bucket keys of t in order.
func (t *tier) sortedKeys() []int64 {
	return slices.Sorted(maps.Keys(t.buckets))
}

// pick returns the finest tier holding every row at or after since, or the
// all-rows tier.
func (s *Store) pick(since time.Time) *tier {
	all := s.tiers[len(s.tiers)-1]
	if since.IsZero() {
		return all
	}
	minute := floorDiv(since.Unix(), 60)
	for _, t := range s.tiers[:len(s.tiers)-1] {
		if t.seen && floorDiv(minute, t.width) >= t.top-t.keep+1 {
			return t
		}
	}
	return all
}

// sortKinds orders breakdown rows: most requests first, then by name.
func sortByCount[T any](xs []T, count func(T) int64, name func(T) string) {
	slices.SortFunc(xs, func(a, b T) int {
		return cmp.Or(cmp.Compare(count(b), count(a)), cmp.Compare(name(a), name(b)))
	})
}
