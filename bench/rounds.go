package bench

import "math"

// QuantileRatio is a percentile ratio ours/baseline with its 95% interval
// and the per-round ratios the interval also covers.
type QuantileRatio struct {
	Point  float64
	CI95   Interval
	Rounds RoundRatios
}

// QuantileRatioOverRounds returns the ratio of quantile q (0.99 is p99) of
// ours over the baseline's, each side's latencies given per round: round
// i's recorders of both sides ran in the same interleaved round.
//
// The point is the ratio of the quantiles of all the latencies of each
// side. The interval is the hull of two intervals, each estimating one
// source of uncertainty:
//
//   - QuantileRatioCI over all the latencies: the sampling of the
//     percentile within the run, as if every latency were independent;
//   - the t interval over the rounds' paired ratios of the percentile
//     (PairedRatioCI of the per-round quantiles): the spread between
//     rounds, which under load is where most of the uncertainty lies (each
//     side runs in its own time slots, a merge lands in one and not the
//     other) and which the bootstrap does not see.
//
// bench replicas found this first: its bootstrap was about ±1% wide while
// its rounds' p99 ratios spread over ±10–20%. A round where a side
// recorded nothing is left out of the rounds' interval and counted in
// Rounds.Dropped.
func QuantileRatioOverRounds(baseline, ours []*LatencyRecorder, q float64, seed uint64) QuantileRatio {
	pooledBase, pooledOurs := Pool(baseline), Pool(ours)
	point := Ratio(Ms(pooledOurs.Quantile(q)), Ms(pooledBase.Quantile(q)))
	perRound := func(recs []*LatencyRecorder) []float64 {
		out := make([]float64, len(recs))
		for i, r := range recs {
			out[i] = math.NaN()
			if r.Count() > 0 {
				out[i] = Ms(r.Quantile(q))
			}
		}
		return out
	}
	rounds := PairedRatioCI(perRound(baseline), perRound(ours))
	bootstrap := QuantileRatioCI(pooledBase, pooledOurs, q, seed)
	return QuantileRatio{Point: point, Rounds: rounds, CI95: rounds.IntervalAround(point).Hull(bootstrap)}
}

// Pool returns a new recorder holding the latencies of every recorder in
// recs (nil recorders are skipped).
func Pool(recs []*LatencyRecorder) *LatencyRecorder {
	out := NewLatencyRecorder()
	for _, r := range recs {
		if r != nil {
			out.Merge(r)
		}
	}
	return out
}

// ShareCI returns the 95% Wilson score interval of a share k/n, such as
// the share of searches that failed: a count that noise moves, judged
// with the binomial interval rather than as exact. With k = 0 its low end
// is 0 and its high end about 3.84/n, so zero failures in 100 searches do
// not prove a share below 1%. With n = 0 there is no interval.
func ShareCI(k, n int64) Interval {
	if n <= 0 || k < 0 || k > n {
		return NoInterval
	}
	const z = 1.959964
	p, fn := float64(k)/float64(n), float64(n)
	denom := 1 + z*z/fn
	centre := (p + z*z/(2*fn)) / denom
	half := z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / denom
	iv := Interval{Low: math.Max(0, centre-half), High: math.Min(1, centre+half)}
	// Exactly at the ends, not a rounding error away: the interval must
	// hold the share itself.
	if k == 0 {
		iv.Low = 0
	}
	if k == n {
		iv.High = 1
	}
	return iv
}

// Share returns k/n, or 0 when n is 0.
func Share(k, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(k) / float64(n)
}
