// Package promreg registers Prometheus collectors that several components of
// one process may create with the same name (the indexer's workers, the event
// log opened by the server and by the indexer).
//
// Invariant: a collector is registered once per registry; later callers get
// the one already registered, and a different collector under a taken name
// panics at start, as prometheus.MustRegister would.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterOrReuse registers c, or returns the identical collector that is
// already registered.
func RegisterOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}
