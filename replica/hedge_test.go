package replica

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// newHedgeTest returns a round-robin policy over 2 replicas (so the first
// read goes to replica 0, the next-best is 1) and a Hedger that has seen
// 20 reads of 10 ms on each replica: its p95 delay is 10 ms. Unless cfg
// says otherwise, every read may be hedged (Suspect −1); the default is
// TestHedgeOnlyReadsToASuspectReplica's.
func newHedgeTest(t *testing.T, cfg HedgeConfig) (Policy, *Hedger) {
	t.Helper()
	if cfg.Suspect == 0 {
		cfg.Suspect = -1
	}
	p := newTestPolicy(t, 2, Config{Policy: PolicyRoundRobin})
	h, err := NewHedger(2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		h.Observe(0, 10*time.Millisecond)
		h.Observe(1, 10*time.Millisecond)
	}
	return p, h
}

func serverError(_ context.Context, err error) bool { return err != nil && !errors.Is(err, errAnswer) }

var errAnswer = errors.New("an answer that is an error")

func outstanding(p Policy) (n int) {
	for _, s := range p.Snapshot(nil) {
		n += s.Outstanding
	}
	return n
}

func TestHedgeSendsASecondReadAndCancelsTheLoser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, h := newHedgeTest(t, HedgeConfig{})
		if d, ok := h.Delay(0); !ok || d != 10*time.Millisecond {
			t.Fatalf("Delay(0) = %s, %v; want the p95 10ms", d, ok)
		}
		loserCancelled := make(chan time.Duration, 1)
		start := time.Now()
		v, err := Hedge(context.Background(), p, h, nil, func(ctx context.Context, r int) (string, error) {
			if r == 0 { // stalled: answers after 1 s unless cancelled
				select {
				case <-time.After(time.Second):
					return "slow", nil
				case <-ctx.Done():
					loserCancelled <- time.Since(start)
					return "", ctx.Err()
				}
			}
			time.Sleep(2 * time.Millisecond)
			return "hedge", nil
		}, serverError)
		if err != nil || v != "hedge" {
			t.Fatalf("Hedge = %q, %v; want the hedge's answer", v, err)
		}
		if took := time.Since(start); took != 12*time.Millisecond {
			t.Errorf("read took %s, want 12ms (10ms p95 + 2ms hedge)", took)
		}
		select {
		case at := <-loserCancelled:
			if at != 12*time.Millisecond {
				t.Errorf("loser cancelled at %s, want 12ms, when the hedge answered", at)
			}
		case <-time.After(time.Minute):
			t.Fatal("the first read was never cancelled")
		}
		synctest.Wait()
		if got := h.Stats(); got != (HedgeStats{Reads: 1, Hedges: 1, HedgeWins: 1, Cancelled: 1}) {
			t.Errorf("stats %+v, want 1 read, 1 hedge, 1 hedge win, 1 cancelled", got)
		}
		if n := outstanding(p); n != 0 {
			t.Errorf("%d requests still outstanding after both attempts ended, want 0 (each attempt ends with Done)", n)
		}
		if s := p.Snapshot(nil); s[0].Chosen != 1 || s[1].Chosen != 1 || s[0].Failures != 0 {
			t.Errorf("replica stats %+v: want one request on each, the cancelled loser not counted as failed", s)
		}
	})
}

func TestHedgeNotSentWhenTheFirstAnswersInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, h := newHedgeTest(t, HedgeConfig{})
		calls := 0
		v, err := Hedge(context.Background(), p, h, nil, func(ctx context.Context, r int) (int, error) {
			calls++
			time.Sleep(9 * time.Millisecond)
			return r, nil
		}, serverError)
		if err != nil || v != 0 || calls != 1 {
			t.Fatalf("Hedge = %d, %v after %d calls; want replica 0's answer from one call", v, err, calls)
		}
		if got := h.Stats(); got.Hedges != 0 {
			t.Errorf("stats %+v, want no hedge", got)
		}
	})
}

func TestHedgeBudgetIsRespected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10% of reads and a burst of 2: over 100 reads that all stall on
		// their first replica, at most 2 + 0.1·100 hedges.
		p, h := newHedgeTest(t, HedgeConfig{Budget: 0.1, Burst: 2})
		for i := range 100 {
			_, err := Hedge(context.Background(), p, h, nil, func(ctx context.Context, r int) (int, error) {
				if r == i%2 { // round-robin: the first replica of read i
					select {
					case <-time.After(30 * time.Millisecond):
					case <-ctx.Done():
					}
					return r, nil
				}
				time.Sleep(time.Millisecond)
				return r, nil
			}, serverError)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		// A loser may still be in its sleep (synctest.Wait returns while
		// goroutines sleep): let the bubble's clock run past every sleep.
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		got := h.Stats()
		if got.Reads != 100 || got.Hedges > 12 || got.Hedges < 10 {
			t.Fatalf("stats %+v: want 100 reads and 10..12 hedges (burst 2 + 10%%)", got)
		}
		if n := outstanding(p); n != 0 {
			t.Errorf("%d requests outstanding, want 0", n)
		}
	})
}

func TestHedgeFallsBackOnServerFailureAndReturnsAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, h := newHedgeTest(t, HedgeConfig{Budget: -1})
		v, err := Hedge(context.Background(), p, h, nil, func(ctx context.Context, r int) (int, error) {
			if r == 0 {
				return 0, errors.New("connection refused")
			}
			return 1, nil
		}, serverError)
		if err != nil || v != 1 {
			t.Fatalf("Hedge = %d, %v; want replica 1's answer after replica 0 failed", v, err)
		}
		_, err = Hedge(context.Background(), p, h, nil, func(ctx context.Context, r int) (int, error) {
			return r, errAnswer
		}, serverError)
		if !errors.Is(err, errAnswer) {
			t.Fatalf("an answer that is an error came back as %v, want it unchanged", err)
		}
		_, err = Hedge(context.Background(), p, h, nil, func(ctx context.Context, r int) (int, error) {
			return r, errors.New("down")
		}, serverError)
		if !errors.Is(err, ErrNoAnswer) {
			t.Fatalf("every replica down: %v, want ErrNoAnswer", err)
		}
		if n := outstanding(p); n != 0 {
			t.Errorf("%d requests outstanding, want 0", n)
		}
		if h.Stats().Hedges != 0 {
			t.Errorf("hedges %d with a negative budget, want 0", h.Stats().Hedges)
		}
	})
}

func TestHedgerDelayIsTheRecentQuantile(t *testing.T) {
	h, err := NewHedger(1, HedgeConfig{Window: 100, MinSamples: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		h.Observe(0, time.Duration(i+1)*time.Millisecond)
	}
	if _, ok := h.Delay(0); ok {
		t.Fatal("Delay known after 9 samples, want MinSamples 10")
	}
	for i := 9; i < 100; i++ {
		h.Observe(0, time.Duration(i+1)*time.Millisecond)
	}
	// Recomputed every Window/8 = 12 samples: last at 94 samples (p95 90).
	if d, ok := h.Delay(0); !ok || d < 90*time.Millisecond || d > 95*time.Millisecond {
		t.Fatalf("Delay = %s, %v over 1..100 ms; want the p95, 90..95ms", d, ok)
	}
	// The window forgets: 1 ms samples replace the old ones.
	for range 120 {
		h.Observe(0, time.Millisecond)
	}
	if d, _ := h.Delay(0); d != time.Millisecond {
		t.Fatalf("Delay = %s after 120 samples of 1ms, want 1ms", d)
	}
	if err := (HedgeConfig{Quantile: 1.5, Burst: 0.5}).Validate(); err == nil {
		t.Fatal("Validate accepted quantile 1.5 and burst 0.5")
	}
}

func TestHedgeWaitsWhileTheReplicaAnswersOthers(t *testing.T) {
	for _, even := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			p, h := newHedgeTest(t, HedgeConfig{EvenIfAnswering: even})
			// Replica 0 answers other reads every millisecond for 50 ms.
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < 50 && ctx.Err() == nil; i++ {
					time.Sleep(time.Millisecond)
					h.Observe(0, 5*time.Millisecond)
				}
			}()
			v, err := Hedge(context.Background(), p, h, nil, func(ctx context.Context, r int) (int, error) {
				if r == 0 {
					select {
					case <-time.After(30 * time.Millisecond):
					case <-ctx.Done():
					}
				}
				return r, nil
			}, serverError)
			stop()
			<-done
			synctest.Wait()
			want := 0 // slow, but its replica is alive: no hedge
			if even {
				want = 1 // hedged at the p95 regardless
			}
			if err != nil || v != want {
				t.Fatalf("EvenIfAnswering %v: Hedge = %d, %v; want replica %d's answer (stats %+v)", even, v, err, want, h.Stats())
			}
		})
	}
}

// By default only a read whose replica is suspect may be hedged: with both
// replicas' p95 at 10 ms, a read that stalls on replica 0 runs inline and
// waits; once replica 0's p95 is 40 ms, over twice replica 1's, a read to
// it that stalls is hedged.
func TestHedgeOnlyReadsToASuspectReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, h := newHedgeTest(t, HedgeConfig{Suspect: DefaultHedgeSuspect})
		stallOnZero := func(ctx context.Context, r int) (int, error) {
			if r == 0 {
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}
			return r, nil
		}
		start := time.Now()
		if v, err := Hedge(context.Background(), p, h, nil, stallOnZero, serverError); err != nil || v != 0 {
			t.Fatalf("Hedge = %d, %v; want replica 0's late answer", v, err)
		}
		if took := time.Since(start); took != 100*time.Millisecond || h.Stats().Hedges != 0 {
			t.Fatalf("read took %s with %d hedges; want 100ms and none (replica 0 is not suspect)", took, h.Stats().Hedges)
		}
		for range 128 { // replica 0's window fills with 40ms reads
			h.Observe(0, 40*time.Millisecond)
		}
		for range 2 { // round-robin: replica 1 first, then replica 0
			start = time.Now()
			v, err := Hedge(context.Background(), p, h, nil, stallOnZero, serverError)
			if err != nil || v != 1 {
				t.Fatalf("Hedge = %d, %v; want replica 1's answer", v, err)
			}
			if took := time.Since(start); took > 40*time.Millisecond {
				t.Fatalf("read took %s, want at most replica 0's p95, 40ms, then the hedge", took)
			}
		}
		synctest.Wait()
		if got := h.Stats(); got.Hedges != 1 || got.HedgeWins != 1 {
			t.Errorf("stats %+v, want one hedge, won (the read to replica 0, suspect)", got)
		}
	})
}
