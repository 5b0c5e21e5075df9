package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterOrReuseReturnsTheFirstCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "baedal_test_total", Help: "test"}
	first := RegisterOrReuse(reg, prometheus.NewCounter(opts))
	second := RegisterOrReuse(reg, prometheus.NewCounter(opts))
	first.Inc()
	if second != first {
		t.Fatal("the second registration did not return the first collector")
	}
	defer func() {
		if recover() == nil {
			t.Error("a different collector type under a taken name must panic")
		}
	}()
	RegisterOrReuse(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "baedal_test_total", Help: "test"}))
}
