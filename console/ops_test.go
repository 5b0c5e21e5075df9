package console

import (
	"encoding/json"
	"math"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestBucketQuantile(t *testing.T) {
	buckets := []OpsBucket{{LE: 1, Count: 2}, {LE: 2, Count: 6}, {LE: 4, Count: 10}}
	for _, tc := range []struct {
		name    string
		q       float64
		buckets []OpsBucket
		count   uint64
		want    float64 // NaN: nil
	}{
		{"p10 interpolates in the first bucket from 0", 0.10, buckets, 10, 0.5},
		{"p50 interpolates in the second bucket", 0.50, buckets, 10, 1.75},
		{"p99 interpolates in the third bucket", 0.99, buckets, 10, 3.95},
		{"rank in +Inf answers the last finite bound", 0.99, buckets, 12, 4},
		{"empty bucket before the rank", 0.5, []OpsBucket{{LE: 1, Count: 0}, {LE: 3, Count: 4}}, 4, 2},
		{"empty histogram", 0.5, buckets[:0], 0, math.NaN()},
		{"no observations", 0.5, []OpsBucket{{LE: 1, Count: 0}}, 0, math.NaN()},
		{"q out of range", 1.5, buckets, 10, math.NaN()},
	} {
		got := BucketQuantile(tc.q, tc.buckets, tc.count)
		switch {
		case math.IsNaN(tc.want) && got != nil:
			t.Errorf("%s: got %g, want nil", tc.name, *got)
		case !math.IsNaN(tc.want) && (got == nil || math.Abs(*got-tc.want) > 1e-9):
			t.Errorf("%s: got %v, want %g", tc.name, got, tc.want)
		}
	}
}

// TestOpsEndpointReportsMetricsByName registers real metrics of each kind,
// observes known values and reads them back through GET /console/api/ops.
func TestOpsEndpointReportsMetricsByName(t *testing.T) {
	reg := prometheus.NewRegistry()
	events := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baedal_indexer_events_total", Help: "events"}, []string{"layout"})
	lag := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baedal_indexer_consumer_lag", Help: "lag"}, []string{"layout", "partition"})
	bulk := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baedal_indexer_bulk_seconds", Help: "bulk", Buckets: []float64{0.01, 0.1, 1}}, []string{"layout"})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "other_requests_total", Help: "not baedal's"})
	unused := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baedal_search_seconds", Help: "no series yet"}, []string{"layout"})
	reg.MustRegister(events, lag, bulk, other, unused)
	events.WithLabelValues("split").Add(1500)
	events.WithLabelValues("nested").Add(7)
	lag.WithLabelValues("split", "0").Set(42)
	for range 3 {
		bulk.WithLabelValues("split").Observe(0.005)
	}
	bulk.WithLabelValues("split").Observe(0.05)
	other.Inc()

	ts := newTestServer(t, Deps{Gatherer: reg})
	resp, body := get(t, ts.Client(), ts.URL+"/console/api/ops")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	checkSecurityHeaders(t, resp)
	var snap OpsSnapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatalf("not JSON: %v: %s", err, body)
	}
	if snap.TimeMs <= 0 {
		t.Errorf("time_ms = %d", snap.TimeMs)
	}
	if _, ok := snap.Metrics["other_requests_total"]; ok {
		t.Error("a metric without the baedal_ prefix was returned")
	}
	if _, ok := snap.Metrics["baedal_search_seconds"]; ok {
		t.Error("a vector with no series was returned; the page must show it as no data")
	}

	ev := snap.Metrics["baedal_indexer_events_total"]
	if ev.Type != "counter" || len(ev.Series) != 2 {
		t.Fatalf("events = %+v, want a counter with 2 series", ev)
	}
	byLayout := map[string]float64{}
	for _, s := range ev.Series {
		byLayout[s.Labels["layout"]] = *s.Value
	}
	if byLayout["split"] != 1500 || byLayout["nested"] != 7 {
		t.Errorf("events by layout = %v, want split 1500, nested 7", byLayout)
	}

	lg := snap.Metrics["baedal_indexer_consumer_lag"]
	if lg.Type != "gauge" || len(lg.Series) != 1 || *lg.Series[0].Value != 42 || lg.Series[0].Labels["partition"] != "0" {
		t.Errorf("lag = %+v, want one gauge series of 42 for partition 0", lg)
	}

	bk := snap.Metrics["baedal_indexer_bulk_seconds"]
	if bk.Type != "histogram" || len(bk.Series) != 1 {
		t.Fatalf("bulk = %+v, want a histogram with one series", bk)
	}
	s := bk.Series[0]
	if s.Count != 4 || math.Abs(s.Sum-0.065) > 1e-9 {
		t.Errorf("bulk count, sum = %d, %g; want 4, 0.065", s.Count, s.Sum)
	}
	wantBuckets := []OpsBucket{{0.01, 3}, {0.1, 4}, {1, 4}}
	if len(s.Buckets) != 3 || s.Buckets[0] != wantBuckets[0] || s.Buckets[1] != wantBuckets[1] || s.Buckets[2] != wantBuckets[2] {
		t.Errorf("bulk buckets = %v, want %v", s.Buckets, wantBuckets)
	}
	// p50: rank 2 of 4 falls in the first bucket (3 of 4 below 0.01): 0.01*2/3.
	if s.P50 == nil || math.Abs(*s.P50-0.01*2/3) > 1e-9 {
		t.Errorf("bulk p50 = %v, want %g", s.P50, 0.01*2/3)
	}
	// p99: rank 3.96 falls in the second bucket (1 of 4): 0.01 + 0.09*0.96.
	if s.P99 == nil || math.Abs(*s.P99-(0.01+0.09*0.96)) > 1e-9 {
		t.Errorf("bulk p99 = %v, want %g", s.P99, 0.01+0.09*0.96)
	}
}
