package bench

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// lognormalRecorder records n latencies exp(N(mu, sigma)) ms drawn from rng:
// a right-skewed latency distribution whose every quantile scales with
// exp(mu), so two such recorders with mu and mu+log(r) have the true ratio
// r at every percentile.
func lognormalRecorder(rng *rand.Rand, n int, mu, sigma float64) *LatencyRecorder {
	rec := NewLatencyRecorder()
	for range n {
		ms := math.Exp(mu + sigma*rng.NormFloat64())
		rec.Record(time.Duration(ms * float64(time.Millisecond)))
	}
	return rec
}

// TestQuantileRatioCICoversTrueRatio: over 200 seeded trials on synthetic
// latencies with a known true ratio, the 95% bootstrap interval of the p50
// and p99 ratio covers the true ratio in at least 90% of the trials, and it
// narrows as samples grow.
func TestQuantileRatioCICoversTrueRatio(t *testing.T) {
	const trials, trueRatio = 200, 0.8
	for _, tc := range []struct {
		q float64
		n int
	}{{0.5, 500}, {0.99, 2000}} {
		rng := rand.New(rand.NewPCG(7, uint64(tc.n)))
		covered := 0
		for trial := range trials {
			base := lognormalRecorder(rng, tc.n, math.Log(20), 0.6)
			ours := lognormalRecorder(rng, tc.n, math.Log(20*trueRatio), 0.6)
			ci := QuantileRatioCI(base, ours, tc.q, uint64(trial))
			if !ci.Known() {
				t.Fatalf("q=%v n=%d trial %d: no interval", tc.q, tc.n, trial)
			}
			if ci.Contains(trueRatio) {
				covered++
			}
		}
		share := float64(covered) / trials
		t.Logf("q=%v n=%d per side: the interval covered the true ratio in %d of %d trials (%.1f%%)", tc.q, tc.n, covered, trials, share*100)
		if share < 0.90 {
			t.Errorf("q=%v n=%d: coverage %.1f%%, want >= 90%%", tc.q, tc.n, share*100)
		}
	}

	// Narrows as samples grow: the mean relative width at 10× the samples
	// is well under the width at 1×.
	width := func(n int) float64 {
		rng := rand.New(rand.NewPCG(11, uint64(n)))
		var sum float64
		for trial := range 20 {
			base := lognormalRecorder(rng, n, math.Log(20), 0.6)
			ours := lognormalRecorder(rng, n, math.Log(20*trueRatio), 0.6)
			ci := QuantileRatioCI(base, ours, 0.99, uint64(trial))
			sum += (ci.High - ci.Low) / trueRatio
		}
		return sum / 20
	}
	small, large := width(1000), width(10000)
	t.Logf("p99 ratio interval width: %.3f of the ratio at 1,000 samples per side, %.3f at 10,000", small, large)
	if !(large < 0.6*small) {
		t.Errorf("width at 10,000 samples %.3f, want well under the %.3f at 1,000", large, small)
	}
}

// TestResampleQuantileMatchesNaiveBootstrap: the Beta shortcut gives the
// same bootstrap distribution of a percentile as drawing every resample
// value by value.
func TestResampleQuantileMatchesNaiveBootstrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	rec := lognormalRecorder(rng, 200, math.Log(10), 0.8)
	e := rec.empirical()
	var sample []float64 // every recorded value, with repeats
	for i, v := range e.values {
		prev := int64(0)
		if i > 0 {
			prev = e.cum[i-1]
		}
		for range e.cum[i] - prev {
			sample = append(sample, v)
		}
	}
	const draws = 20000
	for _, q := range []float64{0.5, 0.9, 0.99} {
		k := e.rank(q)
		fast, naive := make([]float64, draws), make([]float64, draws)
		resample := make([]float64, len(sample))
		for i := range draws {
			fast[i] = e.resampleQuantile(rng, k)
			for j := range resample {
				resample[j] = sample[rng.IntN(len(sample))]
			}
			slices.Sort(resample)
			naive[i] = resample[k-1]
		}
		slices.Sort(fast)
		slices.Sort(naive)
		for _, p := range []float64{0.025, 0.25, 0.5, 0.75, 0.975} {
			f, n := sortedQuantile(fast, p), sortedQuantile(naive, p)
			if math.Abs(f-n)/n > 0.05 {
				t.Errorf("q=%v: the %v quantile of the resampled percentile is %.0f by the shortcut, %.0f by naive resampling", q, p, f, n)
			}
		}
	}
}

func TestQuantileCIIsSeededAndContainsThePoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	base := lognormalRecorder(rng, 3000, math.Log(30), 0.5)
	ours := lognormalRecorder(rng, 3000, math.Log(15), 0.5)
	a, b := QuantileRatioCI(base, ours, 0.99, 42), QuantileRatioCI(base, ours, 0.99, 42)
	if a != b {
		t.Errorf("same seed, different intervals: %v and %v", a, b)
	}
	point := Ratio(Ms(ours.Quantile(0.99)), Ms(base.Quantile(0.99)))
	if !a.Contains(point) || a.Low >= a.High {
		t.Errorf("interval %v, point %v", a, point)
	}
	if !a.Contains(0.5) {
		t.Errorf("interval %v misses the true ratio 0.5", a)
	}
	one := QuantileCI(ours, 0.99, 1)
	p99 := Ms(ours.Quantile(0.99))
	if !one.Contains(p99) || one.High-one.Low > 0.3*p99 {
		t.Errorf("p99 %v ms, interval %v", p99, one)
	}
	tiny := NewLatencyRecorder()
	tiny.Record(time.Millisecond)
	if QuantileRatioCI(base, tiny, 0.5, 1).Known() || QuantileCI(tiny, 0.5, 1).Known() || QuantileCI(nil, 0.5, 1).Known() {
		t.Error("an interval from one sample, want NoInterval")
	}
}

// TestPairedRatioCICoversTrueRatio: per-round ratios with multiplicative
// noise around a known ratio; over 200 seeded trials the 95% interval
// covers it in at least 90%, and more rounds narrow it.
func TestPairedRatioCICoversTrueRatio(t *testing.T) {
	const trials, trueRatio = 200, 4.0
	run := func(rounds int, seed uint64) (coverage, width float64) {
		rng := rand.New(rand.NewPCG(seed, 1))
		covered := 0
		for range trials {
			base, ours := make([]float64, rounds), make([]float64, rounds)
			for i := range rounds {
				drift := math.Exp(0.3 * rng.NormFloat64()) // the machine's state, shared by the pair
				base[i] = 1000 * drift * math.Exp(0.08*rng.NormFloat64())
				ours[i] = 1000 * trueRatio * drift * math.Exp(0.08*rng.NormFloat64())
			}
			rr := PairedRatioCI(base, ours)
			if rr.Rounds != rounds || !(rr.Min <= rr.Max) {
				t.Fatalf("%+v", rr)
			}
			if rr.CI95.Contains(trueRatio) {
				covered++
			}
			width += (rr.CI95.High - rr.CI95.Low) / trueRatio
		}
		return float64(covered) / trials, width / trials
	}
	c4, w4 := run(4, 1)
	c16, w16 := run(16, 2)
	t.Logf("4 rounds: coverage %.1f%%, mean width %.3f of the ratio; 16 rounds: %.1f%%, %.3f", c4*100, w4, c16*100, w16)
	if c4 < 0.9 || c16 < 0.9 {
		t.Errorf("coverage %.2f (4 rounds), %.2f (16 rounds), want >= 0.90", c4, c16)
	}
	if !(w16 < 0.6*w4) {
		t.Errorf("width %.3f at 16 rounds, want well under %.3f at 4", w16, w4)
	}
}

func TestPairedRatioCIEdges(t *testing.T) {
	rr := PairedRatioCI([]float64{100, 200, 50}, []float64{200, 400, 100})
	if rr.Rounds != 3 || rr.Min != 2 || rr.Max != 2 || rr.GeoMean != 2 || rr.CI95 != (Interval{2, 2}) {
		t.Errorf("constant ratio 2: %+v", rr)
	}
	rr = PairedRatioCI([]float64{100, 0, 100}, []float64{150, 10, math.NaN()})
	if rr.Rounds != 1 || rr.CI95.Known() || rr.Min != 1.5 || rr.Max != 1.5 {
		t.Errorf("one usable round: %+v, want no interval", rr)
	}
	if rr := PairedRatioCI(nil, nil); rr.Rounds != 0 || rr.CI95.Known() {
		t.Errorf("no rounds: %+v", rr)
	}
	rr = PairedRatioCI([]float64{1, 1, 1, 1}, []float64{0.9, 1.1, 1.0, 1.05})
	if !rr.CI95.Contains(1) || rr.Min != 0.9 || rr.Max != 1.1 || !rr.IntervalAround(1.4).Contains(1.4) {
		t.Errorf("%+v", rr)
	}
}

func TestStudentT975(t *testing.T) {
	for df, want := range map[int]float64{1: 12.706, 3: 3.182, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980, 1000000: 1.960} {
		if got := studentT975(df); math.Abs(got-want) > 0.001 {
			t.Errorf("t(0.975, %d) = %.4f, want %.3f", df, got, want)
		}
	}
}

func TestTargetJudge(t *testing.T) {
	for _, tc := range []struct {
		target Target
		ci     Interval
		want   Verdict
	}{
		{AtMost(0.7), Interval{0.5, 0.69}, VerdictMet},
		{AtMost(0.7), Interval{0.5, 0.7}, VerdictMet},
		{AtMost(0.7), Interval{0.65, 0.75}, VerdictUndecided},
		{AtMost(0.7), Interval{0.71, 0.9}, VerdictMissed},
		{AtLeast(20), Interval{21, 40}, VerdictMet},
		{AtLeast(20), Interval{20, 40}, VerdictMet},
		{AtLeast(20), Interval{19, 22}, VerdictUndecided},
		{AtLeast(20), Interval{10, 19.9}, VerdictMissed},
		{AtLeast(1), Exact(1), VerdictMet},
		{AtMost(0), Exact(0), VerdictMet},
		{AtMost(0), Exact(3), VerdictMissed},
		{AtMost(0.7), NoInterval, VerdictUndecided},
	} {
		if got := tc.target.Judge(tc.ci); got != tc.want || !got.Valid() {
			t.Errorf("%s judged on %v = %q, want %q", tc.target, tc.ci, got, tc.want)
		}
	}
	if Verdict("maybe").Valid() {
		t.Error(`"maybe" is a valid verdict`)
	}
}

func TestIntervalJSON(t *testing.T) {
	res := Targets{"p99_ratio": AtMost(0.7).Evaluate(0.8, Interval{0.75, 0.86})}
	b, err := json.Marshal(map[string]any{"a_ci95": Interval{0.5, 0.75}, "b_ci95": NoInterval, "targets": res})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a_ci95":[0.5,0.75],"b_ci95":null,"targets":{"p99_ratio":{"target":0.7,"better":"lower","point":0.8,"ci95":[0.75,0.86],"verdict":"missed"}}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back struct {
		A Interval `json:"a_ci95"`
		B Interval `json:"b_ci95"`
	}
	if err := json.Unmarshal(b, &back); err != nil || back.A != (Interval{0.5, 0.75}) || back.B.Known() {
		t.Errorf("decoded %+v, %v", back, err)
	}
	if got := (Interval{0.1234, 0.5678}).Around(0.6); got != (Interval{0.123, 0.6}) {
		t.Errorf("Around = %v", got)
	}
}

func TestIntervalSectionDrawsErrorBars(t *testing.T) {
	rr := PairedRatioCI([]float64{1, 1, 1}, []float64{2, 2.2, 1.9})
	sec := IntervalSection([]Figure{
		{Name: "throughput_ratio", Point: 2.03, CI95: rr.IntervalAround(2.03), Rounds: &rr},
		{Name: "p99_ratio", Point: 0.9, CI95: Interval{0.8, 1.02}},
		{Name: "no interval", Point: 1.1, CI95: NoInterval},
	})
	if len(sec.Table.Rows) != 3 || sec.Table.Rows[1][2] != "[0.8, 1.02]" || !strings.Contains(sec.Table.Rows[0][3], "(3)") {
		t.Errorf("table %q", sec.Table.Rows)
	}
	svg := renderSVG(sec.Charts[0])
	if n := strings.Count(svg, "<path d=\"M"); n != 3 {
		t.Errorf("%d error bars drawn, want 3 (one, flat, for the figure without an interval)", n)
	}
	if !strings.Contains(svg, "p99_ratio: [0.8, 1.02]") {
		t.Errorf("error bar has no title with its interval:\n%s", svg)
	}
	ts := TargetsSection(Targets{"p99_ratio": AtMost(0.7).Evaluate(0.9, Interval{0.8, 1.02})})
	if row := ts.Table.Rows[0]; row[1] != "<= 0.7" || row[4] != "missed" {
		t.Errorf("targets row %q", row)
	}
}

func TestIntervalProblems(t *testing.T) {
	good := `{"r":0.9,"r_ci95":[0.8,1.1],"idle":{"p":2,"p_ci95":[2,2]},
		"targets":{"r":{"target":0.7,"better":"lower","point":0.9,"ci95":[0.8,1.1],"verdict":"missed"},
		"n":{"target":1,"better":"higher","point":1,"ci95":null,"verdict":"undecided"}}}`
	summary, err := ParseSummary([]byte(strings.ReplaceAll(good, "\n", "")))
	if err != nil {
		t.Fatal(err)
	}
	if p := IntervalProblems(summary, "r", "idle.p"); len(p) != 0 {
		t.Errorf("problems in a good summary: %q", p)
	}
	bad := `{"r":0.9,"r_ci95":[0.95,1.1],"s":1,"s_ci95":null,"targets":{"r":{"target":0.7,"better":"lower","point":0.9,"ci95":[0.8,1.1],"verdict":"maybe"}}}`
	summary, err = ParseSummary([]byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	if p := IntervalProblems(summary, "r", "s", "absent"); len(p) != 4 {
		t.Errorf("want 4 problems (unordered, null, absent, verdict), got %q", p)
	}
}

func TestHistogramQuantileCIOnRawHistograms(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	base, ours := hdrhistogram.New(1, int64(10*time.Second), 3), hdrhistogram.New(1, int64(10*time.Second), 3)
	for range 5000 {
		_ = base.RecordValue(int64(5000 * math.Exp(0.3*rng.NormFloat64()))) // ns
		_ = ours.RecordValue(int64(2000 * math.Exp(0.3*rng.NormFloat64())))
	}
	ratio := HistogramQuantileRatioCI(base, ours, 0.5, 1)
	if !ratio.Contains(0.4) || !ratio.Contains(Ratio(float64(ours.ValueAtQuantile(50)), float64(base.ValueAtQuantile(50)))) || ratio.High-ratio.Low > 0.05 {
		t.Errorf("p50 ratio interval %v, want a narrow one around 0.4", ratio)
	}
	one := HistogramQuantileCI(ours, 0.5, 1)
	if !one.Contains(2000) || !one.Contains(float64(ours.ValueAtQuantile(50))) || one.High-one.Low > 100 {
		t.Errorf("p50 interval %v ns, want a narrow one around 2000", one)
	}
	if HistogramQuantileCI(nil, 0.5, 1).Known() || HistogramQuantileRatioCI(base, nil, 0.5, 1).Known() {
		t.Error("an interval from a nil histogram")
	}
	rv := RoundValuesCI([]float64{4900, 5100, 5000, 5050, -1})
	if rv.Rounds != 4 || rv.Min != 4900 || rv.Max != 5100 || !rv.CI95.Contains(5000) || rv.CI95.High > 5200 {
		t.Errorf("RoundValuesCI %+v", rv)
	}
}

func TestIntervalHull(t *testing.T) {
	a, b := Interval{Low: 0.9, High: 1.1}, Interval{Low: 1.0, High: 1.3}
	if got := a.Hull(b); got != (Interval{Low: 0.9, High: 1.3}) {
		t.Errorf("hull of %v and %v: %v, want [0.9, 1.3]", a, b, got)
	}
	if got := NoInterval.Hull(b); got != b {
		t.Errorf("hull of an unknown interval and %v: %v, want %v", b, got, b)
	}
	if got := a.Hull(NoInterval); got != a {
		t.Errorf("hull of %v and an unknown interval: %v, want %v", a, got, a)
	}
	if got := NoInterval.Hull(NoInterval); got.Known() {
		t.Errorf("hull of two unknown intervals: %v, want unknown", got)
	}
}
