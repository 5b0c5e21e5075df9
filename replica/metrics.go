package replica

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a Policy's per-replica statistics as Prometheus metrics,
// read from Snapshot at scrape time (nothing is updated on the request path).
// Every metric has the label "replica" (the replica's name, e.g. its
// address) and the constant label "path" (which read path the policy serves).
type Collector struct {
	policy Policy
	names  []string
	path   string

	rank, outstanding, share, responseTime, serviceTime, queueLen, ping *prometheus.Desc
	chosen, failures, ejections                                         *prometheus.Desc
}

// NewCollector returns a collector for policy, whose replica i is called
// names[i]. namespace is the metric name prefix (e.g. "baedal_redis_read"),
// path the value of the "path" label (e.g. "feed").
func NewCollector(policy Policy, namespace, path string, names []string) *Collector {
	labels := []string{"replica"}
	constLabels := prometheus.Labels{"path": path, "policy": string(policy.Name())}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_"+name, help, labels, constLabels)
	}
	return &Collector{
		policy:       policy,
		names:        names,
		path:         path,
		rank:         desc("replica_rank_seconds", "C3 rank Ψ of the replica (lower is better), computed for every policy"),
		outstanding:  desc("replica_outstanding", "requests of this client in flight to the replica"),
		share:        desc("replica_share", "share of all requests started on the replica since start, 0..1"),
		responseTime: desc("replica_response_time_seconds", "EWMA of the client-seen response time"),
		serviceTime:  desc("replica_service_time_seconds", "EWMA of the server-side service time"),
		queueLen:     desc("replica_queue_length", "EWMA of the server-side queue length estimate"),
		ping:         desc("replica_ping_seconds", "EWMA of the ping round trip"),
		chosen:       desc("replica_requests_total", "requests started on the replica"),
		failures:     desc("replica_failures_total", "requests to the replica that failed"),
		ejections: prometheus.NewDesc(namespace+"_replica_ejections_total",
			"C3 ejections of the replica by cause: slow (response time), silent (no reply while others answer), ping (ping gate), ping_extension (an ejection the gate extended)",
			[]string{"replica", "cause"}, constLabels),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rank, c.outstanding, c.share, c.responseTime, c.serviceTime, c.queueLen, c.ping, c.chosen, c.failures, c.ejections} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	stats := c.policy.Snapshot(nil)
	var total uint64
	for _, s := range stats {
		total += s.Chosen
	}
	for _, s := range stats {
		name := c.name(s.Replica)
		share := 0.0
		if total > 0 {
			share = float64(s.Chosen) / float64(total)
		}
		ch <- prometheus.MustNewConstMetric(c.rank, prometheus.GaugeValue, s.Rank, name)
		ch <- prometheus.MustNewConstMetric(c.outstanding, prometheus.GaugeValue, float64(s.Outstanding), name)
		ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, share, name)
		ch <- prometheus.MustNewConstMetric(c.responseTime, prometheus.GaugeValue, s.ResponseTime.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(c.serviceTime, prometheus.GaugeValue, s.ServiceTime.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(c.queueLen, prometheus.GaugeValue, s.QueueLen, name)
		ch <- prometheus.MustNewConstMetric(c.ping, prometheus.GaugeValue, s.Ping.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(c.chosen, prometheus.CounterValue, float64(s.Chosen), name)
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(s.Failures), name)
		for cause, n := range map[string]uint64{"slow": s.SlowEjections, "silent": s.SilentEjections, "ping": s.PingEjections, "ping_extension": s.PingExtensions} {
			ch <- prometheus.MustNewConstMetric(c.ejections, prometheus.CounterValue, float64(n), name, cause)
		}
	}
}

func (c *Collector) name(r int) string {
	if r < len(c.names) {
		return c.names[r]
	}
	return "replica-" + strconv.Itoa(r)
}
