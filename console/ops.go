package console

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// MetricPrefix selects the metrics /console/api/ops returns: baedal's own,
// not the Go runtime's or the process's.
const MetricPrefix = "baedal_"

// OpsSnapshot is the body of GET /console/api/ops: the current value of
// every selected metric, by name. Counters and histograms are cumulative
// since the process started; the page computes rates and windowed
// quantiles from the difference between two snapshots.
type OpsSnapshot struct {
	TimeMs  int64                `json:"time_ms"`
	Metrics map[string]OpsMetric `json:"metrics"`
}

// OpsMetric is one metric family.
type OpsMetric struct {
	Type   string      `json:"type"` // counter, gauge, histogram, summary or untyped
	Help   string      `json:"help"`
	Series []OpsSeries `json:"series"`
}

// OpsSeries is one labelled series. Counters, gauges and untyped metrics
// set Value; histograms set Count, Sum, the quantiles (absent while Count
// is 0) and Buckets.
type OpsSeries struct {
	Labels  map[string]string `json:"labels"`
	Value   *float64          `json:"value,omitempty"`
	Count   uint64            `json:"count,omitempty"`
	Sum     float64           `json:"sum,omitempty"`
	P50     *float64          `json:"p50,omitempty"`
	P90     *float64          `json:"p90,omitempty"`
	P99     *float64          `json:"p99,omitempty"`
	Buckets []OpsBucket       `json:"buckets,omitempty"`
}

// OpsBucket is a cumulative histogram bucket: Count observations <= LE.
// The +Inf bucket is left out (its count is the series' Count).
type OpsBucket struct {
	LE    float64 `json:"le"`
	Count uint64  `json:"count"`
}

// Snapshot gathers g and keeps the metrics whose name starts with prefix.
func Snapshot(g prometheus.Gatherer, prefix string) (OpsSnapshot, error) {
	families, err := g.Gather()
	snap := OpsSnapshot{TimeMs: time.Now().UnixMilli(), Metrics: map[string]OpsMetric{}}
	if err != nil && len(families) == 0 {
		return snap, err
	}
	// Gather may return partial results with an error (e.g. one collector
	// failed); the families it did return are still worth showing.
	for _, mf := range families {
		name := mf.GetName()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		m := OpsMetric{Type: strings.ToLower(mf.GetType().String()), Help: mf.GetHelp(), Series: []OpsSeries{}}
		for _, pm := range mf.GetMetric() {
			s := OpsSeries{Labels: map[string]string{}}
			for _, lp := range pm.GetLabel() {
				s.Labels[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				s.Value = finite(pm.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				s.Value = finite(pm.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				s.Value = finite(pm.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := pm.GetHistogram()
				s.Count, s.Sum = h.GetSampleCount(), h.GetSampleSum()
				for _, b := range h.GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 0) {
						s.Buckets = append(s.Buckets, OpsBucket{LE: b.GetUpperBound(), Count: b.GetCumulativeCount()})
					}
				}
				s.P50 = BucketQuantile(0.50, s.Buckets, s.Count)
				s.P90 = BucketQuantile(0.90, s.Buckets, s.Count)
				s.P99 = BucketQuantile(0.99, s.Buckets, s.Count)
			case dto.MetricType_SUMMARY:
				sm := pm.GetSummary()
				s.Count, s.Sum = sm.GetSampleCount(), sm.GetSampleSum()
				for _, q := range sm.GetQuantile() {
					switch q.GetQuantile() {
					case 0.5:
						s.P50 = finite(q.GetValue())
					case 0.9:
						s.P90 = finite(q.GetValue())
					case 0.99:
						s.P99 = finite(q.GetValue())
					}
				}
			}
			m.Series = append(m.Series, s)
		}
		snap.Metrics[name] = m
	}
	return snap, nil
}

// BucketQuantile estimates the q-quantile (0..1) of a histogram from its
// cumulative buckets (sorted by LE, +Inf left out) and total count, the way
// Prometheus' histogram_quantile does: linear interpolation inside the
// bucket that holds the rank, from 0 for the first bucket. A rank beyond the
// last finite bucket answers that bucket's bound. It returns nil when the
// histogram is empty.
func BucketQuantile(q float64, buckets []OpsBucket, count uint64) *float64 {
	if count == 0 || len(buckets) == 0 || q < 0 || q > 1 || math.IsNaN(q) {
		return nil
	}
	rank := q * float64(count)
	i := sort.Search(len(buckets), func(i int) bool { return float64(buckets[i].Count) >= rank })
	if i == len(buckets) {
		return finite(buckets[len(buckets)-1].LE)
	}
	lower, below := 0.0, uint64(0)
	if i > 0 {
		lower, below = buckets[i-1].LE, buckets[i-1].Count
	}
	inBucket := buckets[i].Count - below
	if inBucket == 0 {
		return finite(buckets[i].LE)
	}
	v := lower + (buckets[i].LE-lower)*(rank-float64(below))/float64(inBucket)
	return finite(v)
}

// finite returns a pointer to v, or nil for NaN and ±Inf, which JSON cannot
// carry.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
