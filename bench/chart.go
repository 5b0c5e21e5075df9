package bench

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ChartKind selects how a Chart draws its series.
type ChartKind int

const (
	// BarChart draws grouped bars: one group per label (Series.Labels, or
	// Series.X when there are no labels), one bar per series in each group.
	BarChart ChartKind = iota
	// LineChart draws each series as a line through (X[i], Y[i]); without X
	// the points are spaced evenly.
	LineChart
	// CDFChart draws the percentile curve of each Series.Latency: x is the
	// percentile on a "nines" scale (0, 90, 99, 99.9, 99.99 evenly spaced) so
	// the tail is as visible as the median, y the latency in ms. A series
	// without Latency is drawn from X (percentiles, 0..100) and Y (ms).
	CDFChart
)

// String returns the kind's name.
func (k ChartKind) String() string {
	switch k {
	case BarChart:
		return "bar"
	case LineChart:
		return "line"
	case CDFChart:
		return "cdf"
	}
	return "ChartKind(" + strconv.Itoa(int(k)) + ")"
}

// Chart is one SVG chart in a report section. LogY draws the y axis on a
// log scale (good for latency; values <= 0 are left out); LogX does the same
// for the x axis of a LineChart.
type Chart struct {
	Title, XLabel, YLabel string
	Kind                  ChartKind
	Series                []Series
	LogX, LogY            bool
}

// Series is one named set of values in a chart, drawn in its own color and
// listed in the legend.
type Series struct {
	Name    string
	X       []float64
	Y       []float64
	Labels  []string         // bar labels (BarChart)
	Latency *LatencyRecorder // percentile curve source (CDFChart)
	// Low and High, when set for bar j, draw an error bar from Low[j] to
	// High[j] over bar j (BarChart), such as a 95% interval.
	Low, High []float64
}

// LatencyCDF returns a CDFChart of the recorders, one series per name, in
// the order given: names[i] is drawn from recorders[i].
func LatencyCDF(title string, names []string, recorders []*LatencyRecorder) Chart {
	c := Chart{Title: title, Kind: CDFChart}
	for i, name := range names {
		if i < len(recorders) {
			c.Series = append(c.Series, Series{Name: name, Latency: recorders[i]})
		}
	}
	return c
}

// Colors of the series, in order: the Okabe–Ito palette (distinct for
// colour-blind readers) without its yellow, then grey and black.
var seriesColors = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F", "#000000"}

// Chart geometry in SVG user units; the SVG scales to the page width.
const (
	svgWidth    = 760
	svgHeight   = 380
	plotLeft    = 72
	plotRight   = 580
	plotTop     = 40
	plotBottom  = 318
	legendLeft  = 598
	legendRow   = 18
	legendChars = 20
)

type point struct{ x, y float64 }

type plotSeries struct {
	name   string
	color  string
	points []point
}

// SVG returns the chart as a standalone <svg> element, as the HTML report
// draws it (for a chart kept beside a document, e.g. BENCHMARKS.md's).
func (c Chart) SVG() string { return renderSVG(c) }

// renderSVG draws c as a standalone <svg> element. Every text it writes
// goes through esc.
func renderSVG(c Chart) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="system-ui, sans-serif" font-size="12">`, svgWidth, svgHeight, esc(c.Title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`, svgWidth, svgHeight)
	fmt.Fprintf(&b, `<text x="%d" y="22" text-anchor="middle" font-size="15" font-weight="600">%s</text>`, (plotLeft+plotRight)/2, esc(c.Title))
	switch c.Kind {
	case BarChart:
		drawBars(&b, c)
	case CDFChart:
		drawCDF(&b, c)
	default:
		drawLines(&b, c)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func drawLines(b *strings.Builder, c Chart) {
	var series []plotSeries
	for i, s := range c.Series {
		ps := plotSeries{name: s.Name, color: color(i)}
		for j, y := range s.Y {
			x := float64(j)
			if j < len(s.X) {
				x = s.X[j]
			} else if len(s.X) > 0 {
				break
			}
			if usable(x, c.LogX) && usable(y, c.LogY) {
				ps.points = append(ps.points, point{x, y})
			}
		}
		series = append(series, ps)
	}
	xs, ys := extent(series)
	if len(xs) == 0 {
		drawNoData(b, c)
		return
	}
	xAxis := newAxis(xs, c.LogX, false)
	yAxis := newAxis(ys, c.LogY, !c.LogY)
	drawAxes(b, c.XLabel, c.YLabel, xAxis, yAxis)
	drawPolylines(b, series, xAxis, yAxis)
	drawLegend(b, series)
}

func drawCDF(b *strings.Builder, c Chart) {
	// The x axis reaches the percentile the data can resolve: 99.9 for 1000
	// samples, at most 99.999.
	maxNines := 1.0
	for _, s := range c.Series {
		if n := s.Latency.Count(); n > 0 {
			maxNines = max(maxNines, math.Min(5, math.Ceil(math.Log10(float64(n)))))
		}
		if s.Latency == nil {
			for _, p := range s.X {
				if p >= 0 && p < 100 {
					maxNines = max(maxNines, math.Min(5, math.Ceil(-math.Log10(1-p/100))))
				}
			}
		}
	}
	var series []plotSeries
	for i, s := range c.Series {
		ps := plotSeries{name: s.Name, color: color(i)}
		if s.Latency != nil {
			if s.Latency.Count() > 0 {
				var qs, xs []float64
				for x := 0.0; x <= maxNines+1e-9; x += 0.025 {
					xs = append(xs, x)
					qs = append(qs, 1-math.Pow(10, -x))
				}
				for j, d := range s.Latency.Quantiles(qs...) {
					if y := Ms(d); usable(y, c.LogY) {
						ps.points = append(ps.points, point{xs[j], y})
					}
				}
			}
		} else {
			for j := range min(len(s.X), len(s.Y)) {
				if p := s.X[j]; p >= 0 && p < 100 && usable(s.Y[j], c.LogY) {
					x := math.Min(-math.Log10(1-p/100), maxNines)
					ps.points = append(ps.points, point{x, s.Y[j]})
				}
			}
		}
		series = append(series, ps)
	}
	_, ys := extent(series)
	if len(ys) == 0 {
		drawNoData(b, c)
		return
	}
	xAxis := axis{min: 0, max: maxNines}
	for n := 0.0; n <= maxNines; n++ {
		xAxis.ticks = append(xAxis.ticks, tick{n, ninesLabel(int(n))})
	}
	yAxis := newAxis(ys, c.LogY, !c.LogY)
	xLabel, yLabel := c.XLabel, c.YLabel
	if xLabel == "" {
		xLabel = "percentile (%)"
	}
	if yLabel == "" {
		yLabel = "latency (ms)"
	}
	drawAxes(b, xLabel, yLabel, xAxis, yAxis)
	drawPolylines(b, series, xAxis, yAxis)
	drawLegend(b, series)
}

// ninesLabel returns the percentile at n nines: 0, 90, 99, 99.9, ...
func ninesLabel(n int) string {
	switch n {
	case 0:
		return "0"
	case 1:
		return "90"
	case 2:
		return "99"
	}
	return "99." + strings.Repeat("9", n-2)
}

func drawBars(b *strings.Builder, c Chart) {
	var categories []string
	index := map[string]int{}
	type bar struct {
		category  int
		value     float64
		low, high float64
		hasErr    bool
	}
	bars := make([][]bar, len(c.Series))
	var values []float64
	for i, s := range c.Series {
		for j, y := range s.Y {
			var label string
			switch {
			case j < len(s.Labels):
				label = s.Labels[j]
			case j < len(s.X):
				label = formatTick(s.X[j])
			default:
				label = strconv.Itoa(j + 1)
			}
			k, ok := index[label]
			if !ok {
				k = len(categories)
				index[label] = k
				categories = append(categories, label)
			}
			if usable(y, c.LogY) {
				br := bar{category: k, value: y}
				if j < len(s.Low) && j < len(s.High) && usable(s.Low[j], c.LogY) && usable(s.High[j], c.LogY) && s.Low[j] <= s.High[j] {
					br.low, br.high, br.hasErr = s.Low[j], s.High[j], true
					values = append(values, br.low, br.high)
				}
				bars[i] = append(bars[i], br)
				values = append(values, y)
			}
		}
	}
	if len(values) == 0 {
		drawNoData(b, c)
		return
	}
	yAxis := newAxis(values, c.LogY, !c.LogY)
	xAxis := axis{min: 0, max: float64(len(categories))}
	drawAxes(b, c.XLabel, c.YLabel, xAxis, yAxis)

	group := float64(plotRight-plotLeft) / float64(len(categories))
	barWidth := group * 0.8 / float64(max(1, len(c.Series)))
	base := yAxis.pixelY(yAxis.min)
	if !yAxis.log && yAxis.min < 0 {
		base = yAxis.pixelY(0)
	}
	for i, s := range c.Series {
		for _, br := range bars[i] {
			x := plotLeft + group*float64(br.category) + group*0.1 + barWidth*float64(i)
			y := yAxis.pixelY(br.value)
			top, height := math.Min(y, base), math.Abs(base-y)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
				x, top, math.Max(barWidth-1, 1), height, color(i), esc(s.Name+" · "+categories[br.category]+": "+formatTick(br.value)))
			if br.hasErr {
				// A whisker from low to high with caps, over the bar's centre.
				cx, lo, hi, capW := x+barWidth/2, yAxis.pixelY(br.low), yAxis.pixelY(br.high), math.Min(barWidth/4, 8)
				fmt.Fprintf(b, `<path d="M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f" stroke="#1d2327" stroke-width="1.5" fill="none"><title>%s</title></path>`,
					cx, lo, hi, cx-capW, lo, cx+capW, cx-capW, hi, cx+capW,
					esc(s.Name+" · "+categories[br.category]+": ["+formatTick(br.low)+", "+formatTick(br.high)+"]"))
			}
		}
	}
	maxChars := max(3, int(group/6.5))
	for k, label := range categories {
		x := plotLeft + group*(float64(k)+0.5)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s<title>%s</title></text>`, x, plotBottom+16, esc(truncate(label, maxChars)), esc(label))
	}
	series := make([]plotSeries, len(c.Series))
	for i, s := range c.Series {
		series[i] = plotSeries{name: s.Name, color: color(i)}
	}
	drawLegend(b, series)
}

func drawNoData(b *strings.Builder, c Chart) {
	drawFrame(b, c.XLabel, c.YLabel)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#6b757d">no data</text>`, (plotLeft+plotRight)/2, (plotTop+plotBottom)/2)
}

func drawFrame(b *strings.Builder, xLabel, yLabel string) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#9aa3a9"/>`, plotLeft, plotTop, plotRight-plotLeft, plotBottom-plotTop)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, (plotLeft+plotRight)/2, svgHeight-14, esc(xLabel))
	fmt.Fprintf(b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">%s</text>`, (plotTop+plotBottom)/2, esc(yLabel))
}

// drawAxes draws the frame, the y grid with tick labels and the x ticks
// (a BarChart has no x ticks: its axis has none).
func drawAxes(b *strings.Builder, xLabel, yLabel string, xAxis, yAxis axis) {
	for _, t := range yAxis.ticks {
		y := yAxis.pixelY(t.v)
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e6e9eb"/>`, plotLeft, plotRight, y, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, plotLeft-6, y, esc(t.label))
	}
	for _, t := range xAxis.ticks {
		x := xAxis.pixelX(t.v)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#9aa3a9"/>`, x, x, plotBottom, plotBottom+5)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, plotBottom+18, esc(t.label))
	}
	drawFrame(b, xLabel, yLabel)
}

func drawPolylines(b *strings.Builder, series []plotSeries, xAxis, yAxis axis) {
	for _, s := range series {
		if len(s.points) == 0 {
			continue
		}
		var pts strings.Builder
		for i, p := range s.points {
			if i > 0 {
				pts.WriteByte(' ')
			}
			fmt.Fprintf(&pts, "%.1f,%.1f", xAxis.pixelX(p.x), yAxis.pixelY(p.y))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"><title>%s</title></polyline>`, pts.String(), s.color, esc(s.name))
		if len(s.points) <= 40 {
			for _, p := range s.points {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s</title></circle>`,
					xAxis.pixelX(p.x), yAxis.pixelY(p.y), s.color, esc(s.name+": ("+formatTick(p.x)+", "+formatTick(p.y)+")"))
			}
		}
	}
}

func drawLegend(b *strings.Builder, series []plotSeries) {
	for i, s := range series {
		y := plotTop + 6 + legendRow*i
		if y > plotBottom {
			fmt.Fprintf(b, `<text x="%d" y="%d">… %d more</text>`, legendLeft, y+10, len(series)-i)
			return
		}
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`, legendLeft, y, s.color)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s<title>%s</title></text>`, legendLeft+18, y+10, esc(truncate(s.name, legendChars)), esc(s.name))
	}
}

// axis maps data values to pixels, linearly or on a log10 scale.
type axis struct {
	min, max float64
	log      bool
	ticks    []tick
}

type tick struct {
	v     float64
	label string
}

// fraction returns where v lies between min (0) and max (1). The values
// are halved first so that a range near the float64 limits cannot overflow.
func (a axis) fraction(v float64) float64 {
	lo, hi := a.min, a.max
	if a.log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	f := (v/2 - lo/2) / (hi/2 - lo/2)
	if !isFinite(f) {
		return 0.5
	}
	return f
}

func (a axis) pixelX(v float64) float64 {
	return plotLeft + a.fraction(v)*(plotRight-plotLeft)
}

func (a axis) pixelY(v float64) float64 {
	return plotBottom - a.fraction(v)*(plotBottom-plotTop)
}

// newAxis returns an axis covering values with readable ticks; zero makes a
// linear axis start at 0 when every value is positive (bars, latencies).
func newAxis(values []float64, log, zero bool) axis {
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if log {
		return logAxis(lo, hi)
	}
	if zero && lo > 0 {
		lo = 0
	}
	return linearAxis(lo, hi)
}

// maxTicks bounds the ticks of an axis, whatever the data.
const maxTicks = 24

func linearAxis(lo, hi float64) axis {
	if lo == hi {
		if lo == 0 {
			hi = 1
		} else {
			lo, hi = lo-math.Abs(lo)/2, hi+math.Abs(hi)/2
		}
	}
	step := niceNumber(hi/5-lo/5, true)
	a := axis{min: math.Floor(lo/step) * step, max: math.Ceil(hi/step) * step}
	if !isFinite(step) || step <= 0 || !isFinite(a.min) || !isFinite(a.max) || a.min >= a.max || (a.max-a.min)/step > maxTicks {
		// Extreme or degenerate values: label the ends only.
		return axis{min: lo, max: hi, ticks: []tick{{lo, formatTick(lo)}, {hi, formatTick(hi)}}}
	}
	for i := 0; i <= maxTicks; i++ {
		v := a.min + float64(i)*step
		if v > a.max+step/2 {
			break
		}
		a.ticks = append(a.ticks, tick{v, formatTick(v)})
	}
	return a
}

func logAxis(lo, hi float64) axis {
	lowPow, highPow := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if highPow == lowPow {
		highPow++
	}
	a := axis{min: math.Pow(10, lowPow), max: math.Pow(10, highPow), log: true}
	stride := math.Ceil((highPow - lowPow) / maxTicks) // label every decade up to maxTicks decades
	for p := lowPow; p <= highPow; p += stride {
		decade := math.Pow(10, p)
		a.ticks = append(a.ticks, tick{decade, formatTick(decade)})
		if highPow-lowPow <= 2 && p < highPow {
			a.ticks = append(a.ticks, tick{2 * decade, formatTick(2 * decade)}, tick{5 * decade, formatTick(5 * decade)})
		}
	}
	return a
}

// niceNumber returns a number of the form 1, 2 or 5 times a power of ten
// close to v (Heckbert, "Nice numbers for graph labels").
func niceNumber(v float64, round bool) float64 {
	exp := math.Floor(math.Log10(v))
	f := v / math.Pow(10, exp)
	var nice float64
	switch {
	case round && f < 1.5, !round && f <= 1:
		nice = 1
	case round && f < 3, !round && f <= 2:
		nice = 2
	case round && f < 7, !round && f <= 5:
		nice = 5
	default:
		nice = 10
	}
	return nice * math.Pow(10, exp)
}

// formatTick prints a value with at most 4 significant digits, with k/M
// suffixes for large values: 0.25, 12.5, 1500, 25k, 3M.
func formatTick(v float64) string {
	abs := math.Abs(v)
	switch {
	case abs < 1e-12:
		return "0"
	case abs >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 4, 64) + "M"
	case abs >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func extent(series []plotSeries) (xs, ys []float64) {
	for _, s := range series {
		for _, p := range s.points {
			xs = append(xs, p.x)
			ys = append(ys, p.y)
		}
	}
	return xs, ys
}

// usable reports whether v can be drawn: finite, and positive on a log axis.
func usable(v float64, log bool) bool {
	return isFinite(v) && (!log || v > 0)
}

func color(i int) string {
	return seriesColors[i%len(seriesColors)]
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// esc makes text safe inside SVG/HTML text and attribute values: markup
// characters are escaped, and invalid UTF-8 and characters XML forbids
// (control characters, U+FFFE, U+FFFF) become U+FFFD.
func esc(s string) string {
	return html.EscapeString(strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF || r == utf8.RuneError {
			return '\uFFFD'
		}
		return r
	}, s))
}
