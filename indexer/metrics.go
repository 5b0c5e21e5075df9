package indexer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/internal/promreg"
)

// metrics are labelled by layout; several Indexers share them through the
// registry (registerOrReuse).
type metrics struct {
	events       *prometheus.CounterVec
	docs         *prometheus.CounterVec
	conflicts    *prometheus.CounterVec
	retries      *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	bulkSeconds  *prometheus.HistogramVec
	freshness    *prometheus.HistogramVec
	lag          *prometheus.GaugeVec
	lagSeconds   *prometheus.GaugeVec
	replays      *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_indexer_events_total", Help: "Events processed by the indexer (applied, stale or rejected).",
		}, []string{"layout"}),
		docs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_indexer_docs_written_total", Help: "Documents written (index or delete actions accepted, version conflicts included).",
		}, []string{"layout"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_indexer_version_conflicts_total", Help: "Bulk actions answered 409: a newer version was already indexed.",
		}, []string{"layout"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_indexer_bulk_retries_total", Help: "Bulk requests re-sent for 429/5xx items or transport errors.",
		}, []string{"layout"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_indexer_dead_lettered_total", Help: "Events moved to the dead-letter stream.",
		}, []string{"layout"}),
		bulkSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baedal_indexer_bulk_seconds", Help: "Latency of one bulk request.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"layout"}),
		freshness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baedal_indexer_freshness_seconds", Help: "Time from an event's append to its visibility in search (sampled).",
			Buckets: prometheus.ExponentialBuckets(0.01, 1.6, 20),
		}, []string{"layout"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baedal_indexer_consumer_lag", Help: "Entries appended but not yet delivered to the layout's group, per partition (Redis' estimate, at most the stream's length).",
		}, []string{"layout", "partition"}),
		lagSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baedal_indexer_consumer_lag_seconds", Help: "Age of the oldest entry not yet delivered to the layout's group, per partition (0: none).",
		}, []string{"layout", "partition"}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_indexer_durability_replays_total", Help: "Times a primary changed before a flush confirmed the applied events (async translog), so the worker applied its unacknowledged events again.",
		}, []string{"layout"}),
	}
	if reg != nil {
		m.events = promreg.RegisterOrReuse(reg, m.events)
		m.docs = promreg.RegisterOrReuse(reg, m.docs)
		m.conflicts = promreg.RegisterOrReuse(reg, m.conflicts)
		m.retries = promreg.RegisterOrReuse(reg, m.retries)
		m.deadLettered = promreg.RegisterOrReuse(reg, m.deadLettered)
		m.bulkSeconds = promreg.RegisterOrReuse(reg, m.bulkSeconds)
		m.freshness = promreg.RegisterOrReuse(reg, m.freshness)
		m.lag = promreg.RegisterOrReuse(reg, m.lag)
		m.lagSeconds = promreg.RegisterOrReuse(reg, m.lagSeconds)
		m.replays = promreg.RegisterOrReuse(reg, m.replays)
	}
	return m
}
