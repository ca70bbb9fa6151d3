package benchmarks

import (
	"time"

	"adaptbot"
)

// A query runs in three phases: plan picks the tier of buckets, the
// buckets in the filter's range and the series' points; gather walks them,
// summing each selected kind's cells and filling the series; the query
// (query.go) then folds the sums per kind into the summary. The filter's
// own matching (which kinds and rows it selects) is in filter.go.

// queryPlan is what plan decided for one filter.
type queryPlan struct {
	f     Filter
	scope string
	// match says which kinds the filter selects.
	match []bool
	t     *tier
	// keys are the buckets in range that hold a selected row.
	keys []int64
	// wholeRange: no time bound; fast: every row of the selected kinds,
	// read from running totals rather than cells.
	wholeRange, fast bool
	// The series: a point per group buckets from first.
	first, group int64
	series       []Point
	points       []pointAcc
}

// plan decides how to answer f. The caller holds s.mu.
func (s *Store) plan(f Filter, scope string) *queryPlan {
	p := &queryPlan{f: f, scope: scope, match: make([]bool, len(s.kinds))}
	for i := range s.kinds {
		k := &s.kinds[i]
		p.match[i] = matchKind(f, k.intent, k.category, k.toolList, k.outcome, k.user)
	}
	p.t = s.pick(f.Since)
	t := p.t
	for _, k := range t.sortedKeys() {
		start := time.Unix(k*t.width*60, 0)
		end := start.Add(time.Duration(t.width) * time.Minute)
		if (!f.Since.IsZero() && !end.After(f.Since)) || (!f.Until.IsZero() && !start.Before(f.Until)) {
			continue
		}
		p.keys = append(p.keys, k)
	}
	p.wholeRange = f.Since.IsZero() && f.Until.IsZero()
	p.fast = p.wholeRange && f.Tool == "" && f.Path == "" && f.User == ""
	// Leading and trailing buckets without a selected row are left out, so
	// the series spans the selected rows (or the filter's range, below).
	for len(p.keys) > 0 && !p.has(t.buckets[p.keys[0]]) {
		p.keys = p.keys[1:]
	}
	for len(p.keys) > 0 && !p.has(t.buckets[p.keys[len(p.keys)-1]]) {
		p.keys = p.keys[:len(p.keys)-1]
	}
	// The series spans the filter's range when it has one, else the data's.
	if len(p.keys) > 0 {
		first, last := p.keys[0], p.keys[len(p.keys)-1]
		if !f.Since.IsZero() {
			first = min(first, floorDiv(f.Since.Unix()/60, t.width))
		}
		if !f.Until.IsZero() {
			last = max(last, floorDiv((f.Until.Unix()-1)/60, t.width))
		}
		n := last - first + 1
		p.first, p.group = first, (n+MaxPoints-1)/MaxPoints
		p.series = make([]Point, (n+p.group-1)/p.group)
		for i := range p.series {
			p.series[i].T = time.Unix((first+int64(i)*p.group)*t.width*60, 0).UTC()
		}
	}
	p.points = make([]pointAcc, len(p.series))
	return p
}

// has reports whether bucket b holds a row the filter selects.
func (p *queryPlan) has(b *bucket) bool {
	if p.fast {
		for i, c := range b.byIntent {
			if intent, outcome := intentOf(i); c != nil && matchKind(p.f, intent, "", nil, outcome, "") {
				return true
			}
		}
		return b.feedback != nil && matchFeedback(p.f, "", nil)
	}
	for k, c := range b.cells {
		if c != nil && p.match[k] {
			return true
		}
	}
	return false
}

// gather sums the selected cells of each kind (perKind; breakdowns are
// computed per kind after, so the work per cell is a few additions), adds
// them to the series, and returns the span of the rows seen.
func (s *Store) gather(p *queryPlan) (perKind []*cell, from, to time.Time) {
	perKind = make([]*cell, len(s.kinds))
	f, t := p.f, p.t
	if p.fast {
		// Every row of the selected kinds: the running totals per kind, and
		// the series from each bucket's totals per intent, so the work does
		// not grow with the number of cells.
		for k, c := range s.allTime {
			if p.match[k] {
				perKind[k] = c
			}
		}
		for _, key := range p.keys {
			b := t.buckets[key]
			pi := int((key - p.first) / p.group)
			for i, c := range b.byIntent {
				intent, outcome := intentOf(i)
				if c == nil || !matchKind(f, intent, "", nil, outcome, "") {
					continue
				}
				p.points[pi].add(&p.series[pi], c, intent, outcome, p.scope)
				from, to = earlier(from, c.first), later(to, c.last)
			}
			if b.feedback != nil && matchFeedback(f, "", nil) {
				p.points[pi].add(&p.series[pi], b.feedback, adaptbot.IntentFeedback, "", p.scope)
			}
		}
		return perKind, from, to
	}
	buckets := make([]*bucket, 0, len(p.keys)+1)
	for _, k := range p.keys {
		buckets = append(buckets, t.buckets[k])
	}
	if p.wholeRange {
		buckets = append(buckets, s.undated)
	}
	for bi, b := range buckets {
		pi := -1
		if bi < len(p.keys) {
			pi = int((p.keys[bi] - p.first) / p.group)
		}
		for k, c := range b.cells {
			if c == nil || !p.match[k] {
				continue
			}
			if perKind[k] == nil {
				perKind[k] = &cell{}
			}
			perKind[k].merge(c)
			if pi >= 0 {
				kd := &s.kinds[k]
				p.points[pi].add(&p.series[pi], c, kd.intent, kd.outcome, p.scope)
				if kd.intent != adaptbot.IntentFeedback {
					from, to = earlier(from, c.first), later(to, c.last)
				}
			}
		}
	}
	return perKind, from, to
}
