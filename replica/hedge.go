package replica

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults used for zero fields of HedgeConfig.
const (
	DefaultHedgeBudget     = 0.05
	DefaultHedgeBurst      = 100
	DefaultHedgeQuantile   = 0.95
	DefaultHedgeWindow     = 128
	DefaultHedgeMinSamples = 20
	DefaultHedgeSuspect    = 2.0
)

// HedgeConfig tunes hedged reads (see Hedge). Zero fields take the
// Default* values.
type HedgeConfig struct {
	// Budget caps hedges at this fraction of reads: every read earns Budget
	// tokens, a hedge spends one. Negative turns hedging off.
	Budget float64
	// Burst caps the tokens saved, so a stall of one replica can hedge up to
	// Burst reads in flight at once, yet the long-run share stays Budget.
	Burst float64
	// Quantile of a replica's recent latencies after which a read to it is
	// hedged (0.95: its p95).
	Quantile float64
	// Window is how many recent successful latencies per replica the
	// quantile is taken over; MinSamples how many it needs before a read to
	// that replica is hedged.
	Window, MinSamples int
	// MinDelay is the least time a read waits before it is hedged.
	MinDelay time.Duration
	// EvenIfAnswering hedges a read once it has waited its replica's
	// quantile, even while that replica keeps answering other reads. By
	// default a read is hedged only when its replica has also answered
	// nothing for that long (stopped, throttled, partitioned): on a host
	// whose CPUs are the bottleneck, a read slower than p95 is usually slow
	// everywhere, and a second copy of it only adds load.
	EvenIfAnswering bool
	// Suspect: only a read whose first replica is suspect may be hedged:
	// its recent quantile is over Suspect × the lowest recent quantile of
	// the replicas, or it has answered nothing for longer than that lowest
	// quantile (at least MinDelay). The other reads run in the caller's
	// goroutine, without the goroutine, channel and timer a hedge needs:
	// hedging every read cost the benchmark a fifth of its reads/s with
	// every replica healthy. The price: reads sent to a replica just
	// before it stops are not hedged. Negative: any read may be hedged.
	Suspect float64
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c HedgeConfig) WithDefaults() HedgeConfig {
	if c.Budget == 0 {
		c.Budget = DefaultHedgeBudget
	}
	if c.Burst == 0 {
		c.Burst = DefaultHedgeBurst
	}
	if c.Quantile == 0 {
		c.Quantile = DefaultHedgeQuantile
	}
	if c.Window == 0 {
		c.Window = DefaultHedgeWindow
	}
	if c.MinSamples == 0 {
		c.MinSamples = DefaultHedgeMinSamples
	}
	if c.Suspect == 0 {
		c.Suspect = DefaultHedgeSuspect
	}
	return c
}

// Enabled says whether c hedges at all.
func (c HedgeConfig) Enabled() bool { return c.WithDefaults().Budget > 0 }

// Validate reports every invalid field by name.
func (c HedgeConfig) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if math.IsNaN(c.Budget) || c.Budget > 1 {
		errs = append(errs, fmt.Errorf("replica: HedgeBudget: got %v, allowed: negative (off) or up to 1", c.Budget))
	}
	if math.IsNaN(c.Burst) || c.Burst < 1 {
		errs = append(errs, fmt.Errorf("replica: HedgeBurst: got %v, must be at least 1", c.Burst))
	}
	if math.IsNaN(c.Quantile) || c.Quantile <= 0 || c.Quantile >= 1 {
		errs = append(errs, fmt.Errorf("replica: HedgeQuantile: got %v, allowed: 0 < q < 1", c.Quantile))
	}
	if c.Window < 1 || c.MinSamples < 1 || c.MinSamples > c.Window {
		errs = append(errs, fmt.Errorf("replica: HedgeWindow %d, HedgeMinSamples %d: need 1 <= MinSamples <= Window", c.Window, c.MinSamples))
	}
	if math.IsNaN(c.Suspect) || (c.Suspect > 0 && c.Suspect < 1) {
		errs = append(errs, fmt.Errorf("replica: HedgeSuspect: got %v, allowed: negative (every read) or at least 1", c.Suspect))
	}
	if c.MinDelay < 0 {
		errs = append(errs, fmt.Errorf("replica: HedgeMinDelay: got %s, must not be negative", c.MinDelay))
	}
	return errors.Join(errs...)
}

// Hedger holds what hedged reads need beside a Policy: each replica's recent
// latencies (for the hedge delay) and the hedge budget. It is safe for use by
// many goroutines.
type Hedger struct {
	cfg HedgeConfig

	mu       sync.Mutex
	replicas []hedgeWindow
	tokens   float64
	answered []time.Time // per replica: when it last answered a read

	reads, hedges, hedgeWins, cancelled atomic.Uint64
}

// hedgeWindow is a ring of one replica's recent latencies and its cached
// quantile, recomputed every Window/8 new samples (so it may lag the ring
// by that many).
type hedgeWindow struct {
	ring     []time.Duration
	next     int
	full     bool
	fresh    int // samples since the quantile was computed
	quantile time.Duration
	known    bool
}

// NewHedger returns a Hedger over replicas numbered 0..replicas-1. Its
// budget starts full (Burst tokens).
func NewHedger(replicas int, cfg HedgeConfig) (*Hedger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	h := &Hedger{cfg: cfg, replicas: make([]hedgeWindow, replicas), tokens: cfg.Burst, answered: make([]time.Time, replicas)}
	for r := range h.replicas {
		h.replicas[r].ring = make([]time.Duration, 0, cfg.Window)
	}
	return h, nil
}

// Observe records a successful read's latency on replica r, which answered
// it now.
func (h *Hedger) Observe(r int, latency time.Duration) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answered[r] = now
	w := &h.replicas[r]
	if len(w.ring) < cap(w.ring) {
		w.ring = append(w.ring, latency)
	} else {
		w.ring[w.next] = latency
		w.full = true
	}
	w.next = (w.next + 1) % cap(w.ring)
	w.fresh++
	if len(w.ring) >= h.cfg.MinSamples && (!w.known || w.fresh >= max(1, h.cfg.Window/8)) {
		sorted := slices.Clone(w.ring)
		slices.Sort(sorted)
		i := min(len(sorted)-1, int(math.Ceil(h.cfg.Quantile*float64(len(sorted))))-1)
		w.quantile, w.known, w.fresh = sorted[max(i, 0)], true, 0
	}
}

// Delay returns how long a read to replica r waits before it is hedged: the
// replica's recent quantile (at least MinDelay), and false while r has fewer
// than MinSamples latencies.
func (h *Hedger) Delay(r int) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := &h.replicas[r]
	return max(w.quantile, h.cfg.MinDelay), w.known
}

// suspect says whether a read to replica r may be hedged (see
// HedgeConfig.Suspect).
func (h *Hedger) suspect(r int, now time.Time) bool {
	if h.cfg.Suspect < 0 {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.replicas[r].known {
		return false
	}
	lowest := h.replicas[r].quantile
	for _, w := range h.replicas {
		if w.known {
			lowest = min(lowest, w.quantile)
		}
	}
	return float64(h.replicas[r].quantile) > h.cfg.Suspect*float64(lowest) || now.Sub(h.answered[r]) > max(lowest, h.cfg.MinDelay)
}

// silentFor returns how long replica r has answered nothing, at now.
func (h *Hedger) silentFor(r int, now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return now.Sub(h.answered[r])
}

// read counts a read and earns its share of a hedge.
func (h *Hedger) read() {
	h.reads.Add(1)
	h.mu.Lock()
	h.tokens = min(h.tokens+h.cfg.Budget, h.cfg.Burst)
	h.mu.Unlock()
}

// allow spends a token on a hedge, false when the budget is spent.
func (h *Hedger) allow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokens < 1 {
		return false
	}
	h.tokens--
	h.hedges.Add(1)
	return true
}

// HedgeStats counts reads and hedges since the Hedger was made.
type HedgeStats struct {
	Reads uint64 `json:"reads"`
	// Hedges counts second reads sent; HedgeWins those that answered
	// first; Cancelled the losing reads cancelled (first or hedge).
	Hedges    uint64 `json:"hedges"`
	HedgeWins uint64 `json:"hedge_wins"`
	Cancelled uint64 `json:"cancelled"`
}

// Stats returns the counters.
func (h *Hedger) Stats() HedgeStats {
	return HedgeStats{Reads: h.reads.Load(), Hedges: h.hedges.Load(), HedgeWins: h.hedgeWins.Load(), Cancelled: h.cancelled.Load()}
}

// ErrNoAnswer is returned (wrapped, with each replica's error) by Hedge
// when every replica failed.
var ErrNoAnswer = errors.New("replica: no replica answered")

// Hedge runs one read through policy p: on the best replica first; when that
// replica is suspect (HedgeConfig.Suspect), has not answered within its
// recent p95 (Hedger.Delay), nor answered any other read for as long
// (unless HedgeConfig.EvenIfAnswering), and the budget allows, a second
// time on the next-best replica, and the first answer wins while the other
// attempt's context is cancelled. A server failure
// (failed(ctx, err) true) moves the read to the next replica not tried yet,
// as Policy's fallback order. An answer (failed false: nil or an error about
// the request itself) is returned as is; when every replica failed, the
// error wraps ErrNoAnswer.
//
// Each attempt reports to p (Done, with Failed only for a server failure
// before the read ended) from its own goroutine, so the loser is counted
// until it really returns and outstanding counts stay exact. call must be
// safe to run twice at once and must honour ctx. order is scratch space
// (reuse it to avoid allocating). At most one hedge is sent per read.
//
// Hedge waits with timers of package time; tests run it in testing/synctest.
func Hedge[T any](ctx context.Context, p Policy, h *Hedger, order []int, call func(ctx context.Context, r int) (T, error), failed func(ctx context.Context, err error) bool) (T, error) {
	type outcome struct {
		r      int
		hedge  bool
		v      T
		err    error
		failed bool
	}
	order = p.Select(order[:0])
	h.read()
	if len(order) < 2 || h.cfg.Budget <= 0 || !h.suspect(order[0], time.Now()) {
		return TryInOrder(ctx, p, h, order, call, failed)
	}
	results := make(chan outcome, len(order))
	cancels := make([]context.CancelFunc, 0, 2)
	inFlight, next := 0, 1
	launch := func(r int, hedge bool) {
		actx, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		inFlight++
		go func() {
			start := time.Now()
			v, err := call(actx, r)
			latency := time.Since(start)
			// A loser cut short by its cancel did not fail (nor did a read
			// whose caller gave up), and its time so far is a lower bound
			// of its latency, worth recording.
			f := actx.Err() == nil && failed(actx, err)
			p.Done(r, Result{Latency: latency, Failed: f})
			if err == nil && actx.Err() == nil {
				h.Observe(r, latency)
			}
			results <- outcome{r: r, hedge: hedge, v: v, err: err, failed: f || (actx.Err() != nil && ctx.Err() == nil)}
		}()
	}
	cancelAll := func() {
		for _, c := range cancels {
			c()
		}
	}
	launch(order[0], false)
	var timer *time.Timer
	var fire <-chan time.Time
	var delay time.Duration
	if len(order) > 1 && h.cfg.Budget > 0 {
		if d, ok := h.Delay(order[0]); ok {
			delay = d
			timer = time.NewTimer(d)
			fire = timer.C
			defer timer.Stop()
		}
	}
	hedged := false
	var errs []error
	for {
		select {
		case o := <-results:
			inFlight--
			if !o.failed {
				if inFlight > 0 {
					h.cancelled.Add(uint64(inFlight))
				}
				if o.hedge {
					h.hedgeWins.Add(1)
				}
				cancelAll()
				return o.v, o.err
			}
			errs = append(errs, fmt.Errorf("replica %d: %w", o.r, o.err))
			if inFlight > 0 {
				continue // the other attempt may still answer
			}
			if next >= len(order) || ctx.Err() != nil {
				cancelAll()
				var zero T
				if ctx.Err() != nil {
					errs = append(errs, ctx.Err())
				}
				return zero, fmt.Errorf("%w: %w", ErrNoAnswer, errors.Join(errs...))
			}
			p.Start(order[next])
			launch(order[next], false)
			next++
		case <-fire:
			fire = nil
			if silent := h.silentFor(order[0], time.Now()); !h.cfg.EvenIfAnswering && silent < delay {
				// The replica still answers others: wait until it has been
				// silent for the delay, or this read answers.
				timer.Reset(delay - silent)
				fire = timer.C
				continue
			}
			if !hedged && next < len(order) && inFlight == 1 && h.allow() {
				hedged = true
				p.Start(order[next])
				launch(order[next], true)
				next++
			}
		case <-ctx.Done():
			// Attempts end on their own (their contexts derive from ctx)
			// and report to p; results is buffered for all of them.
			cancelAll()
			var zero T
			return zero, ctx.Err()
		}
	}
}

// TryInOrder runs call on each replica of order in turn, in the caller's
// goroutine, until one answers: order is as Select returned it (its first
// replica already started). Each attempt reports to p, and each answer's
// latency to h (when not nil). A server failure (failed true) moves on to
// the next replica; when every replica failed, the error wraps ErrNoAnswer
// and each replica's error. Hedge runs a read it will not hedge this way.
func TryInOrder[T any](ctx context.Context, p Policy, h *Hedger, order []int, call func(ctx context.Context, r int) (T, error), failed func(ctx context.Context, err error) bool) (T, error) {
	var errs []error
	for i, r := range order {
		if i > 0 {
			if ctx.Err() != nil {
				break
			}
			p.Start(r)
		}
		start := time.Now()
		v, err := call(ctx, r)
		latency := time.Since(start)
		f := failed(ctx, err)
		p.Done(r, Result{Latency: latency, Failed: f})
		if !f {
			if h != nil && err == nil && ctx.Err() == nil {
				h.Observe(r, latency)
			}
			return v, err
		}
		errs = append(errs, fmt.Errorf("replica %d: %w", r, err))
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	var zero T
	return zero, fmt.Errorf("%w: %w", ErrNoAnswer, errors.Join(errs...))
}
