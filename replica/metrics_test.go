package replica

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The collector exports ejections by cause: replica b, whose pings wait
// 40ms against 0.3ms, is ejected once by the ping gate and never for its
// reads; a and c are not ejected.
func TestCollectorExportsEjectionsByCause(t *testing.T) {
	ms := time.Millisecond
	p := newTestPolicy(t, 3, Config{PeakCost: true, SlowFactor: 10, PingGate: 10, PullInterval: time.Hour, Now: newFakeClock().Now})
	for r := range 3 {
		complete(p, r, ok(2*ms))
		p.ObservePing(r, 300*time.Microsecond)
	}
	for range 10 {
		p.ObservePing(1, 40*ms)
	}
	p.Done(p.Pick(), ok(2*ms))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(p, "baedal_test", "feed", []string{"a", "b", "c"}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "baedal_test_replica_ejections_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["replica"]+" "+labels["cause"]] = m.GetCounter().GetValue()
		}
	}
	if len(got) != 12 {
		t.Fatalf("got %d ejection series, want 3 replicas × 4 causes: %v", len(got), got)
	}
	for key, v := range got {
		want := 0.0
		if key == "b ping" {
			want = 1
		}
		if v != want {
			t.Errorf("ejections %s = %v, want %v (all: %v)", key, v, want, got)
		}
	}
}
