package bench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Verdict is what a run says about a target, given the figure's 95%
// interval: met when the whole interval is on the good side of the target,
// missed when the whole interval is on the bad side, undecided when it
// straddles the target (or there is no interval). Noise that stays inside
// the interval cannot turn a met into a missed or the reverse.
type Verdict string

const (
	VerdictMet       Verdict = "met"
	VerdictMissed    Verdict = "missed"
	VerdictUndecided Verdict = "undecided"
)

// Valid reports whether v is one of the three verdicts.
func (v Verdict) Valid() bool {
	return v == VerdictMet || v == VerdictMissed || v == VerdictUndecided
}

// Better says which side of a target is good.
type Better string

const (
	LowerIsBetter  Better = "lower"  // the target is a maximum: figure <= Value
	HigherIsBetter Better = "higher" // the target is a minimum: figure >= Value
)

// Target is a goal a benchmark checks one figure against, such as
// "p99_ratio_under_load <= 0.7" (Better: LowerIsBetter, Value: 0.7).
type Target struct {
	Better Better
	Value  float64
}

// AtMost is the target figure <= v.
func AtMost(v float64) Target { return Target{Better: LowerIsBetter, Value: v} }

// AtLeast is the target figure >= v.
func AtLeast(v float64) Target { return Target{Better: HigherIsBetter, Value: v} }

// String returns "<= v" or ">= v".
func (t Target) String() string {
	op := "<="
	if t.Better == HigherIsBetter {
		op = ">="
	}
	return op + " " + strconv.FormatFloat(t.Value, 'g', -1, 64)
}

// Judge returns the verdict on a figure whose 95% interval is ci, with the
// ends included on the good side: for "<= 0.7", [0.6, 0.7] is met and
// [0.7001, 0.8] missed. An unknown interval is undecided.
func (t Target) Judge(ci Interval) Verdict {
	if !ci.Known() {
		return VerdictUndecided
	}
	good := func(v float64) bool {
		if t.Better == HigherIsBetter {
			return v >= t.Value
		}
		return v <= t.Value
	}
	switch {
	case good(ci.Low) && good(ci.High):
		return VerdictMet
	case !good(ci.Low) && !good(ci.High):
		return VerdictMissed
	}
	return VerdictUndecided
}

// TargetResult is one evaluated target, as it appears in a summary's
// "targets" object.
type TargetResult struct {
	Target  float64  `json:"target"`
	Better  Better   `json:"better"`
	Point   float64  `json:"point"`
	CI95    Interval `json:"ci95"`
	Verdict Verdict  `json:"verdict"`
}

// Evaluate judges a figure (point estimate and 95% interval) against t.
func (t Target) Evaluate(point float64, ci Interval) TargetResult {
	return TargetResult{Target: t.Value, Better: t.Better, Point: point, CI95: ci, Verdict: t.Judge(ci)}
}

// Targets are a benchmark's evaluated targets by name; the name is the
// summary key of the figure, e.g. "p99_ratio_under_load".
type Targets map[string]TargetResult

// Figure is one headline figure with its interval, for IntervalSection.
type Figure struct {
	Name  string
	Point float64
	CI95  Interval
	// Rounds, when set, are the per-round ratios the interval came from.
	Rounds *RoundRatios
}

// IntervalSection returns a report section with a table of the figures
// (point, 95% interval, per-round range when known) and a bar chart of them
// with their intervals as error bars. Figures should be ratios: they share
// one chart axis.
func IntervalSection(figures []Figure) Section {
	table := &Table{Header: []string{"figure", "point", "95% interval", "rounds: min – max (n)"}}
	s := Series{Name: "ratio, 95% interval"}
	for _, f := range figures {
		rounds := "–"
		if f.Rounds != nil && f.Rounds.Rounds > 0 {
			rounds = fmt.Sprintf("%s – %s (%d)", formatFloat(f.Rounds.Min), formatFloat(f.Rounds.Max), f.Rounds.Rounds)
		}
		if f.Rounds != nil && f.Rounds.Dropped > 0 {
			rounds += fmt.Sprintf(", %d failed round(s) left out", f.Rounds.Dropped)
		}
		table.Rows = append(table.Rows, []string{f.Name, formatFloat(f.Point), formatInterval(f.CI95), rounds})
		s.Labels = append(s.Labels, f.Name)
		s.Y = append(s.Y, f.Point)
		lo, hi := f.Point, f.Point
		if f.CI95.Known() {
			lo, hi = f.CI95.Low, f.CI95.High
		}
		s.Low, s.High = append(s.Low, lo), append(s.High, hi)
	}
	sec := Section{
		Title: "Ratios with 95% intervals",
		Text: "Percentile ratios: a seeded bootstrap over both sides' recorded latencies, widened to a t interval over the paired rounds' ratios of that percentile where the benchmark ran rounds (QuantileRatioOverRounds). Per-round ratios: a t interval over the paired ABBA rounds' log ratios, with the rounds' smallest and largest ratio. " +
			"The bench package's documentation explains both.",
		Table: table,
	}
	if len(figures) > 0 {
		sec.Charts = []Chart{{Title: "Ratios with 95% intervals", YLabel: "ours / baseline (log scale)", Kind: BarChart, LogY: true, Series: []Series{s}}}
	}
	return sec
}

// TargetsSection returns a report section with one row per target: goal,
// point, 95% interval and verdict.
func TargetsSection(targets Targets) Section {
	tt := &Table{Header: []string{"target", "goal", "point", "95% interval", "verdict"}}
	for _, name := range slices.Sorted(maps.Keys(targets)) {
		r := targets[name]
		tt.Rows = append(tt.Rows, []string{name, Target{Better: r.Better, Value: r.Target}.String(), formatFloat(r.Point), formatInterval(r.CI95), string(r.Verdict)})
	}
	return Section{Title: "Targets and verdicts", Text: "met: the whole 95% interval is on the good side of the goal; missed: the whole interval is on the bad side; undecided: it straddles the goal.", Table: tt}
}

func formatInterval(iv Interval) string {
	if !iv.Known() {
		return "none (too few samples)"
	}
	return "[" + formatFloat(iv.Low) + ", " + formatFloat(iv.High) + "]"
}
