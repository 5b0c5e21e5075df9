package bench

import (
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The recorder's range: durations from 1 µs to 60 s with 3 significant
// digits. Values are stored in nanoseconds; shorter durations land in the
// lowest bucket and longer ones are clamped to 60 s (and counted by
// Clamped), so an outlier is never silently dropped from the count.
const (
	lowestLatency  = time.Microsecond
	highestLatency = 60 * time.Second
	latencyDigits  = 3
)

// LatencyRecorder is a concurrency-safe HDR histogram of durations
// (1 µs .. 60 s, 3 significant digits). The zero value is not usable; call
// NewLatencyRecorder. Methods on a nil *LatencyRecorder read as empty.
//
// Record takes a mutex; a hot loop with many goroutines should give each
// goroutine its own recorder and Merge them at the end, as RunClosedLoop does.
type LatencyRecorder struct {
	mu      sync.Mutex
	hist    *hdrhistogram.Histogram
	clamped int64
}

// NewLatencyRecorder returns an empty recorder.
func NewLatencyRecorder() *LatencyRecorder {
	return &LatencyRecorder{hist: newHistogram()}
}

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(int64(lowestLatency), int64(highestLatency), latencyDigits)
}

// Record adds one duration. Negative durations count as 0; durations above
// 60 s count as 60 s and are counted by Clamped.
func (r *LatencyRecorder) Record(d time.Duration) {
	clamped := false
	if d < 0 {
		d = 0
	}
	if d > highestLatency {
		d = highestLatency
		clamped = true
	}
	r.mu.Lock()
	// Cannot fail: d is within the histogram's trackable range.
	_ = r.hist.RecordValue(int64(d))
	if clamped {
		r.clamped++
	}
	r.mu.Unlock()
}

// Merge adds every duration recorded in o to r. o is unchanged. Merging a
// recorder into itself doubles its counts. Merge(nil) does nothing.
func (r *LatencyRecorder) Merge(o *LatencyRecorder) {
	if o == nil {
		return
	}
	// Copy o first so that two recorders merging into each other at the same
	// time never hold both locks.
	o.mu.Lock()
	snapshot := o.hist.Clone()
	clamped := o.clamped
	o.mu.Unlock()

	r.mu.Lock()
	r.hist.Merge(snapshot) // same geometry: nothing is dropped
	r.clamped += clamped
	r.mu.Unlock()
}

// Reset forgets every recorded duration, for example after a warm-up round.
func (r *LatencyRecorder) Reset() {
	r.mu.Lock()
	r.hist.Reset()
	r.clamped = 0
	r.mu.Unlock()
}

// Count returns the number of recorded durations.
func (r *LatencyRecorder) Count() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hist.TotalCount()
}

// Clamped returns how many recorded durations exceeded 60 s and were
// recorded as 60 s.
func (r *LatencyRecorder) Clamped() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clamped
}

// Quantile returns the duration at quantile q (0..1; 0.99 is p99), within
// HDR precision (3 significant digits). q outside 0..1 is clamped. An empty
// recorder returns 0.
func (r *LatencyRecorder) Quantile(q float64) time.Duration {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Duration(r.hist.ValueAtQuantile(clampQuantile(q) * 100))
}

// Quantiles returns the durations at each quantile in qs (0..1), in order,
// under one lock.
func (r *LatencyRecorder) Quantiles(qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	if r == nil || len(qs) == 0 {
		return out
	}
	percentiles := make([]float64, len(qs))
	for i, q := range qs {
		percentiles[i] = clampQuantile(q) * 100
	}
	r.mu.Lock()
	values := r.hist.ValueAtPercentilesSlice(percentiles)
	r.mu.Unlock()
	for i, v := range values {
		out[i] = time.Duration(v)
	}
	return out
}

func clampQuantile(q float64) float64 {
	switch {
	case math.IsNaN(q) || q < 0:
		return 0
	case q > 1:
		return 1
	}
	return q
}

// LatencySummary is the JSON form of a recorder: the count and the mean,
// percentiles and maximum in milliseconds, rounded to the microsecond.
type LatencySummary struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Summary returns count, mean, p50, p90, p99, p99.9 and max. An empty
// recorder gives all zeros.
func (r *LatencyRecorder) Summary() LatencySummary {
	if r == nil {
		return LatencySummary{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hist.TotalCount() == 0 {
		return LatencySummary{}
	}
	p := r.hist.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	return LatencySummary{
		Count:  r.hist.TotalCount(),
		MeanMs: nanosToMs(r.hist.Mean()),
		P50Ms:  nanosToMs(float64(p[0])),
		P90Ms:  nanosToMs(float64(p[1])),
		P99Ms:  nanosToMs(float64(p[2])),
		P999Ms: nanosToMs(float64(p[3])),
		MaxMs:  nanosToMs(float64(r.hist.Max())),
	}
}

// nanosToMs converts nanoseconds to milliseconds rounded to 3 decimals (1 µs).
func nanosToMs(ns float64) float64 {
	return round3(ns / float64(time.Millisecond))
}

// Ms converts a duration to milliseconds rounded to 3 decimals (1 µs), the
// unit of every latency in summaries and reports.
func Ms(d time.Duration) float64 {
	return nanosToMs(float64(d))
}

func round3(v float64) float64 {
	return math.Round(v*1000) / 1000
}

// Ratio returns ours/baseline rounded to 3 decimals. It returns 0 when
// baseline is 0 or when either value is NaN or infinite, so a summary with a
// ratio always encodes as JSON. For latencies a ratio below 1 means ours is
// faster; for throughput a ratio above 1 means ours does more.
func Ratio(ours, baseline float64) float64 {
	if baseline == 0 || !isFinite(ours) || !isFinite(baseline) {
		return 0
	}
	v := round3(ours / baseline)
	if !isFinite(v) {
		return 0
	}
	return v
}

func isFinite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

// LatencyCounts is a recorder's contents as plain values, for a recorder
// filled in another process: Values[i] is the lowest duration (ns) of a
// non-empty bucket and Counts[i] its count; Clamped is Clamped().
type LatencyCounts struct {
	Values, Counts []int64
	Clamped        int64
}

// Counts returns r's contents; AddCounts on a recorder adds them back
// bucket for bucket (both have the same geometry).
func (r *LatencyRecorder) Counts() LatencyCounts {
	var c LatencyCounts
	if r == nil {
		return c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, bar := range r.hist.Distribution() {
		if bar.Count > 0 {
			c.Values = append(c.Values, bar.From)
			c.Counts = append(c.Counts, bar.Count)
		}
	}
	c.Clamped = r.clamped
	return c
}

// AddCounts adds the durations c holds (see Counts) to r. Pairs past the
// shorter of Values and Counts, and negative counts, are ignored.
func (r *LatencyRecorder) AddCounts(c LatencyCounts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range min(len(c.Values), len(c.Counts)) {
		if c.Counts[i] > 0 {
			v := min(max(c.Values[i], 0), int64(highestLatency))
			_ = r.hist.RecordValues(v, c.Counts[i]) // within the trackable range
		}
	}
	r.clamped += max(c.Clamped, 0)
}
