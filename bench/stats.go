package bench

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Interval is a 95% confidence interval [Low, High] of a figure. It encodes
// as the JSON array [low, high], or as null when there is no interval (too
// few samples or rounds to compute one); see Known.
type Interval struct {
	Low, High float64
}

// NoInterval is the interval of a figure that has none: too few samples or
// rounds. Its JSON is null and every Target judged on it is undecided.
var NoInterval = Interval{Low: math.NaN(), High: math.NaN()}

// Exact is the interval of a figure that no noise moves, such as a count of
// lost updates: [v, v].
func Exact(v float64) Interval { return Interval{Low: v, High: v} }

// Known reports whether iv is a real interval: both ends finite and
// Low <= High.
func (iv Interval) Known() bool {
	return isFinite(iv.Low) && isFinite(iv.High) && iv.Low <= iv.High
}

// Contains reports whether v lies in the interval, ends included.
func (iv Interval) Contains(v float64) bool {
	return iv.Known() && iv.Low <= v && v <= iv.High
}

// Around widens iv so that it contains point and rounds its ends outwards
// to 3 decimals, like Ratio. Benchmarks report point estimates computed
// from all the data and intervals computed from resamples or rounds; on
// small samples the two can disagree slightly (a percentile bootstrap's
// interval need not contain the sample's own percentile), and a reader
// must never see a point outside its interval. An unknown interval stays
// unknown.
func (iv Interval) Around(point float64) Interval {
	if !iv.Known() {
		return NoInterval
	}
	if isFinite(point) {
		iv.Low, iv.High = math.Min(iv.Low, point), math.Max(iv.High, point)
	}
	return Interval{Low: math.Floor(iv.Low*1000) / 1000, High: math.Ceil(iv.High*1000) / 1000}
}

// Hull returns the smallest interval containing iv and o, the one of them
// that is known when the other is not, or NoInterval when neither is: the
// interval of a figure whose uncertainty has two sources, each estimated
// apart (a percentile's spread between rounds and its sampling within
// them).
func (iv Interval) Hull(o Interval) Interval {
	switch {
	case !iv.Known():
		if o.Known() {
			return o
		}
		return NoInterval
	case !o.Known():
		return iv
	}
	return Interval{Low: math.Min(iv.Low, o.Low), High: math.Max(iv.High, o.High)}
}

// MarshalJSON encodes [low, high], or null for an unknown interval.
func (iv Interval) MarshalJSON() ([]byte, error) {
	if !iv.Known() {
		return []byte("null"), nil
	}
	return json.Marshal([2]float64{iv.Low, iv.High})
}

// UnmarshalJSON decodes [low, high] or null.
func (iv *Interval) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*iv = NoInterval
		return nil
	}
	var v [2]float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*iv = Interval{Low: v[0], High: v[1]}
	return nil
}

// BootstrapResamples is how many resamples QuantileCI and QuantileRatioCI
// draw. With 2,000 resamples the 2.5th and 97.5th percentiles of the
// resampled figure each rest on 50 draws, so the interval's ends move by
// well under 1% between seeds.
const BootstrapResamples = 2000

// empirical is the distribution a recorder holds: the distinct recorded
// values (HDR buckets, at the bucket's highest equivalent value, as
// LatencyRecorder.Quantile reports them) in ascending order and the
// cumulative count up to and including each.
type empirical struct {
	values []float64 // in the histogram's unit: nanoseconds for a LatencyRecorder
	cum    []int64
}

func (r *LatencyRecorder) empirical() empirical {
	if r == nil {
		return empirical{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return empiricalOf(r.hist)
}

func empiricalOf(h *hdrhistogram.Histogram) empirical {
	var e empirical
	if h == nil {
		return e
	}
	bars := h.Distribution()
	var total int64
	for _, b := range bars {
		if b.Count > 0 {
			total += b.Count
			e.values = append(e.values, float64(b.To))
			e.cum = append(e.cum, total)
		}
	}
	return e
}

func (e empirical) n() int64 {
	if len(e.cum) == 0 {
		return 0
	}
	return e.cum[len(e.cum)-1]
}

// rank is the 1-based rank of the sample value LatencyRecorder reports as
// quantile q: round(q·n), at least 1, at most n (HDR histogram's rule).
func (e empirical) rank(q float64) int64 {
	n := e.n()
	k := int64(clampQuantile(q)*float64(n) + 0.5)
	return min(max(k, 1), n)
}

// atFraction returns the smallest value whose cumulative share of the
// sample reaches u (0..1): the empirical quantile function F⁻¹(u).
func (e empirical) atFraction(u float64) float64 {
	need := u * float64(e.n())
	i := sort.Search(len(e.cum), func(i int) bool { return float64(e.cum[i]) >= need })
	return e.values[min(i, len(e.values)-1)]
}

// resampleQuantile draws the quantile-q value of one bootstrap resample:
// n draws with replacement from the sample, then their k-th smallest, with
// k = rank(q). Drawing the n values is not needed: a resample's values are
// F⁻¹(U₁) … F⁻¹(Uₙ) for n uniform U, F⁻¹ is monotone, so its k-th smallest
// value is F⁻¹(U₍ₖ₎), and the k-th smallest of n uniforms has the
// Beta(k, n+1−k) distribution. One Beta draw per resample gives exactly the
// bootstrap distribution of the percentile, at a cost that does not grow
// with n (feed runs record hundreds of thousands of reads per side).
func (e empirical) resampleQuantile(rng *rand.Rand, k int64) float64 {
	return e.atFraction(betaSample(rng, float64(k), float64(e.n()+1-k)))
}

// QuantileCI returns a 95% percentile-bootstrap interval of rec's quantile
// q (0.99 is p99), in milliseconds, from BootstrapResamples resamples drawn
// with a PCG generator seeded by seed. It contains the point estimate
// Ms(rec.Quantile(q)). With fewer than 2 recorded values there is no
// interval.
func QuantileCI(rec *LatencyRecorder, q float64, seed uint64) Interval {
	iv := quantileCI(rec.empirical(), q, seed, 1e-6)
	return iv.Around(Ms(rec.Quantile(q)))
}

// HistogramQuantileCI is QuantileCI for a raw HDR histogram, in its own
// unit (such as a 1 ns histogram of per-record encode times), around the
// point h.ValueAtQuantile(q·100).
func HistogramQuantileCI(h *hdrhistogram.Histogram, q float64, seed uint64) Interval {
	if h == nil {
		return NoInterval
	}
	return quantileCI(empiricalOf(h), q, seed, 1).Around(float64(h.ValueAtQuantile(clampQuantile(q) * 100)))
}

func quantileCI(e empirical, q float64, seed uint64, scale float64) Interval {
	if e.n() < 2 {
		return NoInterval
	}
	rng := newStatsRand(seed)
	k := e.rank(q)
	draws := make([]float64, BootstrapResamples)
	for i := range draws {
		draws[i] = e.resampleQuantile(rng, k) * scale
	}
	return percentileInterval(draws)
}

// QuantileRatioCI returns a 95% percentile-bootstrap interval of the ratio
// ours/baseline of the two recorders' quantile q (the figure
// Ratio(ours p99, baseline p99) estimates). Each resample redraws both
// sides independently, each from its own recorded latencies, and takes the
// ratio of their quantiles; the interval runs from the 2.5th to the 97.5th
// percentile of BootstrapResamples such ratios, widened to contain the
// point estimate (see Interval.Around). With fewer than 2 values on either
// side there is no interval.
func QuantileRatioCI(baseline, ours *LatencyRecorder, q float64, seed uint64) Interval {
	point := Ratio(Ms(ours.Quantile(q)), Ms(baseline.Quantile(q)))
	return quantileRatioCI(baseline.empirical(), ours.empirical(), q, seed).Around(point)
}

// HistogramQuantileRatioCI is QuantileRatioCI for two raw HDR histograms
// in the same unit, around the point Ratio of their quantiles q.
func HistogramQuantileRatioCI(baseline, ours *hdrhistogram.Histogram, q float64, seed uint64) Interval {
	if baseline == nil || ours == nil {
		return NoInterval
	}
	pq := clampQuantile(q) * 100
	point := Ratio(float64(ours.ValueAtQuantile(pq)), float64(baseline.ValueAtQuantile(pq)))
	return quantileRatioCI(empiricalOf(baseline), empiricalOf(ours), q, seed).Around(point)
}

func quantileRatioCI(b, o empirical, q float64, seed uint64) Interval {
	if b.n() < 2 || o.n() < 2 {
		return NoInterval
	}
	rng := newStatsRand(seed)
	kb, ko := b.rank(q), o.rank(q)
	draws := make([]float64, 0, BootstrapResamples)
	for range BootstrapResamples {
		den := b.resampleQuantile(rng, kb)
		if den > 0 {
			draws = append(draws, o.resampleQuantile(rng, ko)/den)
		}
	}
	if len(draws) < BootstrapResamples/2 {
		return NoInterval
	}
	return percentileInterval(draws)
}

// percentileInterval returns the 2.5th and 97.5th percentiles of draws
// (linear interpolation between order statistics). It sorts draws.
func percentileInterval(draws []float64) Interval {
	slices.Sort(draws)
	return Interval{Low: sortedQuantile(draws, 0.025), High: sortedQuantile(draws, 0.975)}
}

func sortedQuantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i]*(1-frac) + sorted[i+1]*frac
}

func newStatsRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed_b007_57a7))
}

// betaSample draws from Beta(a, b), a, b >= 1, as X/(X+Y) with X ~ Gamma(a)
// and Y ~ Gamma(b).
func betaSample(rng *rand.Rand, a, b float64) float64 {
	x := gammaSample(rng, a)
	y := gammaSample(rng, b)
	return x / (x + y)
}

// gammaSample draws from Gamma(shape, 1), shape >= 1, by Marsaglia and
// Tsang's method ("A simple method for generating gamma variables", ACM
// TOMS 26(3), 2000).
func gammaSample(rng *rand.Rand, shape float64) float64 {
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// RoundRatios summarises the per-round ratios ours/baseline of a figure
// measured once per side in every interleaved round (throughput, bytes
// written, ...). The ABBA rounds pair the sides: round i's baseline and
// ours ran back to back on the same machine state.
//
// CI95 is a Student-t interval of the mean of the log ratios, turned back
// into a ratio: exp(mean ± t(0.975, n−1)·sd/√n). Logs make the ratio and
// its inverse symmetric and turn a multiplicative noise into an additive
// one; the interval assumes the rounds' log ratios are independent and
// roughly normal. It needs at least 2 rounds.
type RoundRatios struct {
	Rounds int `json:"rounds"`
	// Dropped counts the rounds left out because a side's figure was not
	// a positive finite number (a round where nothing succeeded): a failed
	// round is counted and shown, never dropped silently.
	Dropped int      `json:"dropped"`
	Min     float64  `json:"min"`
	Max     float64  `json:"max"`
	GeoMean float64  `json:"geo_mean"`
	CI95    Interval `json:"ci95"`
}

// PairedRatioCI returns the per-round ratios' summary of paired per-round
// figures: ours[i]/baseline[i] for every round i both sides measured.
// Rounds where either figure is not positive and finite are left out (no
// ratio) and counted in Dropped, as are rounds only one side measured;
// with fewer than 2 ratios CI95 is NoInterval.
func PairedRatioCI(baseline, ours []float64) RoundRatios {
	var ratios []float64
	dropped := max(len(baseline), len(ours)) - min(len(baseline), len(ours))
	for i := range min(len(baseline), len(ours)) {
		b, o := baseline[i], ours[i]
		if !(b > 0) || !(o > 0) || !isFinite(b) || !isFinite(o) {
			dropped++
			continue
		}
		ratios = append(ratios, o/b)
	}
	rr := RoundValuesCI(ratios)
	rr.Dropped = dropped
	return rr
}

// RoundValuesCI is PairedRatioCI's interval for one figure measured once
// per round that is not a ratio, such as the per-round median encode time
// of a codec judged against an absolute target: the t interval of the
// geometric mean of the positive, finite values, with their min and max.
// Rounds catch the drift of a machine within a run, which a bootstrap over
// the individual times of one histogram does not see.
func RoundValuesCI(values []float64) RoundRatios {
	var logs []float64
	rr := RoundRatios{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, r := range values {
		if !(r > 0) || !isFinite(r) {
			rr.Dropped++
			continue
		}
		logs = append(logs, math.Log(r))
		rr.Min, rr.Max = math.Min(rr.Min, r), math.Max(rr.Max, r)
	}
	rr.Rounds = len(logs)
	if rr.Rounds == 0 {
		return RoundRatios{Dropped: rr.Dropped, CI95: NoInterval}
	}
	mean, sd := meanSD(logs)
	rr.GeoMean = round3(math.Exp(mean))
	rr.Min, rr.Max = round3(rr.Min), round3(rr.Max)
	rr.CI95 = NoInterval
	if rr.Rounds >= 2 {
		half := studentT975(rr.Rounds-1) * sd / math.Sqrt(float64(rr.Rounds))
		rr.CI95 = Interval{Low: math.Exp(mean - half), High: math.Exp(mean + half)}.Around(rr.GeoMean)
	}
	return rr
}

// IntervalAround returns rr.CI95 widened to contain point, the figure the
// benchmark reports (usually the ratio of the totals, which is close to
// but not the geometric mean of the rounds' ratios).
func (rr RoundRatios) IntervalAround(point float64) Interval {
	return rr.CI95.Around(point)
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// studentT975 is the 97.5th percentile of Student's t distribution with df
// degrees of freedom (df >= 1): a two-sided 95% interval's multiplier.
// Exact to 3 decimals from a table up to 30, then the Cornish–Fisher
// expansion around the normal's 1.960 (error below 0.001).
func studentT975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < 1 {
		return math.Inf(1)
	}
	if df <= len(table) {
		return table[df-1]
	}
	z, n := 1.959964, float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n)
}
