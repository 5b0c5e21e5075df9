package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// FollowConfig schedules FollowOpenLoop: which changes are issued when,
// and how each is followed until it is seen.
type FollowConfig struct {
	// Interval between two issues: issue i is due at start + i·Interval,
	// however many earlier changes are still being followed.
	Interval time.Duration
	// Issues is how many issues are scheduled.
	Issues int
	// Limit is how long a change is followed: one not seen within Limit of
	// its due time is given up and counted at Limit in the latencies.
	Limit time.Duration
	// MinPoll is the shortest pause between two looks at one change. The
	// pause grows with the change's age (age/20), so a slow change costs
	// few looks and its time is still known to 5%.
	MinPoll time.Duration
	// MaxLooks bounds the looks in flight at once (0: 4), so following
	// stays a small load beside what it measures. A look that waits for a
	// slot is late, which can only lengthen a measured time, never leave a
	// change out.
	MaxLooks int
}

// Validate names the first invalid field.
func (c FollowConfig) Validate() error {
	switch {
	case c.Interval <= 0:
		return fmt.Errorf("bench: follow interval is %s, want > 0", c.Interval)
	case c.Issues < 0:
		return fmt.Errorf("bench: follow issues is %d, want >= 0", c.Issues)
	case c.Limit <= 0:
		return fmt.Errorf("bench: follow limit is %s, want > 0", c.Limit)
	case c.MinPoll < 0 || c.MaxLooks < 0:
		return fmt.Errorf("bench: follow min poll %s and max looks %d must be >= 0", c.MinPoll, c.MaxLooks)
	}
	return nil
}

// Look reports whether a followed change is visible yet. An error ends the
// run: a look that cannot be made is a broken benchmark, not a slow change.
type Look func(ctx context.Context) (seen bool, err error)

// FollowResult is what FollowOpenLoop measured.
type FollowResult struct {
	// Latency holds one value per followed change: from its due time to the
	// first look that saw it, or Limit for a change given up.
	Latency *LatencyRecorder
	// Followed = Seen + GaveUp.
	Followed, Seen, GaveUp int64
	// Lag holds how late each issue started against its schedule.
	Lag *LatencyRecorder
}

// FollowOpenLoop measures how long changes take to become visible, open
// loop: issue(ctx, i) is called for i = 0 .. Issues-1 at its due time
// start + i·Interval, one after the other, whatever is in flight; it makes
// the change (such as a POST of events) and returns a Look for the change
// to follow, or nil when issue i is not followed (load only). Every
// followed change is followed until seen or until Limit, in its own
// goroutine, and counts: a change given up enters the latencies at Limit.
//
// A closed-loop probe (start a probe only when fewer than N are in flight)
// samples slow periods less than fast ones: while changes take long, the
// probes in flight block new ones. Here a slow period is sampled in
// proportion to its duration, which is what a percentile of freshness
// needs. Times run from the due time, so an issue that starts late (the
// previous issue's POST was slow) counts its wait.
//
// An error from issue or from a look ends the run with that error after
// the followers in flight stop.
func FollowOpenLoop(ctx context.Context, cfg FollowConfig, issue func(ctx context.Context, i int) (Look, error)) (FollowResult, error) {
	res := FollowResult{Latency: NewLatencyRecorder(), Lag: NewLatencyRecorder()}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	maxLooks := cfg.MaxLooks
	if maxLooks == 0 {
		maxLooks = 4
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	slots := make(chan struct{}, maxLooks)
	var followers sync.WaitGroup
	var seen, gaveUp atomic.Int64
	fail := func(err error) { cancel(err) }

	follow := func(look Look, due time.Time) {
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			ok, err := look(ctx)
			<-slots
			age := time.Since(due)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				fail(err)
				return
			case ok:
				seen.Add(1)
				res.Latency.Record(age)
				return
			case age >= cfg.Limit:
				gaveUp.Add(1)
				res.Latency.Record(cfg.Limit)
				return
			}
			timer.Reset(min(max(cfg.MinPoll, age/20), cfg.Limit-age))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
	}

	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := 0; i < cfg.Issues && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * cfg.Interval)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
			if ctx.Err() != nil {
				break
			}
		}
		res.Lag.Record(time.Since(due))
		look, err := issue(ctx, i)
		if err != nil {
			fail(fmt.Errorf("bench: issue %d: %w", i, err))
			break
		}
		if look != nil {
			followers.Go(func() { follow(look, due) })
		}
	}
	followers.Wait()
	res.Seen, res.GaveUp = seen.Load(), gaveUp.Load()
	res.Followed = res.Seen + res.GaveUp
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}
