package benchmarks

import (
	"math"
	"time"
)

// A histogram counts durations in fixed buckets whose bounds grow by a factor
// of 2^(1/4) from 100 µs: bucket 0 holds everything up to 100 µs, bucket i
// holds (100 µs·2^((i-1)/4), 100 µs·2^(i/4)], and the last bucket holds
// everything from about 56 minutes up. A quantile read from it is the
// geometric middle of its bucket, clamped to the smallest and largest value
// seen, so it is within 2^(1/8)-1 ≈ 9.1% of the exact value (the nearest-rank
// quantile), whatever the number of rows. Merging two histograms adds their
// counts, so a histogram per time bucket and per kind of request can be
// summed into any filtered view. Memory is fixed: histBuckets counters.
type histogram struct {
	counts   [histBuckets]uint32
	lo, hi   uint8 // the range of buckets that may be non-zero, to merge fast
	n        uint32
	min, max time.Duration
	total    time.Duration
}

const (
	histBuckets = 100
	histBase    = 100 * time.Microsecond
	histPerOct  = 4 // buckets per doubling
)

// MaxQuantileError is the largest relative error of a latency quantile the
// aggregates report.
var MaxQuantileError = math.Pow(2, 1.0/(2*histPerOct)) - 1

func histIndex(d time.Duration) int {
	if d <= histBase {
		return 0
	}
	i := int(math.Ceil(histPerOct * math.Log2(float64(d)/float64(histBase))))
	return min(max(i, 1), histBuckets-1)
}

// histUpper is the upper bound of bucket i.
func histUpper(i int) float64 {
	return float64(histBase) * math.Pow(2, float64(i)/histPerOct)
}

func (h *histogram) add(d time.Duration) {
	h.addAt(max(d, 0), uint8(histIndex(max(d, 0))))
}

// addAt is add with the bucket index already computed (histIndex(d)), so a
// row counted in several cells computes it once.
func (h *histogram) addAt(d time.Duration, i uint8) {
	if h.n == 0 {
		h.lo, h.hi, h.min, h.max = i, i, d, d
	} else {
		h.lo, h.hi = min(h.lo, i), max(h.hi, i)
		h.min, h.max = min(h.min, d), max(h.max, d)
	}
	h.counts[i]++
	h.n++
	h.total += d
}

// sum returns the sum of the durations added.
func (h *histogram) sum() time.Duration { return h.total }

func (h *histogram) merge(o *histogram) {
	if o == nil || o.n == 0 {
		return
	}
	if h.n == 0 {
		h.lo, h.hi, h.min, h.max = o.lo, o.hi, o.min, o.max
	} else {
		h.lo, h.hi = min(h.lo, o.lo), max(h.hi, o.hi)
		h.min, h.max = min(h.min, o.min), max(h.max, o.max)
	}
	for i := o.lo; i <= o.hi; i++ {
		h.counts[i] += o.counts[i]
	}
	h.n += o.n
	h.total += o.total
}

// quantile estimates the q-quantile (0 < q ≤ 1) by nearest rank, in seconds;
// ok is false when the histogram is empty.
func (h *histogram) quantile(q float64) (secs float64, ok bool) {
	if h.n == 0 {
		return 0, false
	}
	rank := uint32(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint32
	for i := int(h.lo); i <= int(h.hi); i++ {
		seen += h.counts[i]
		if seen >= rank {
			var v float64
			if i == 0 {
				v = float64(histBase) / 2
			} else {
				v = math.Sqrt(histUpper(i-1) * histUpper(i))
			}
			v = min(max(v, float64(h.min)), float64(h.max))
			return round(v / float64(time.Second)), true
		}
	}
	return round(h.max.Seconds()), true
}
