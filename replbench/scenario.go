package replbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/baedal/baedal/replica"
	"github.com/baedal/baedal/replica/redisread"
)

// Scenario names, also their keys in the Summary.
const (
	scenarioHealthy    = "healthy"
	scenarioDegraded   = "degraded"
	scenarioStalled    = "stalled"
	scenarioRecovering = "recovering"
)

// contender is one side of the Redis comparison: a policy and how its
// client is set up.
type contender struct {
	name   string
	policy replica.PolicyName
	// ours marks baedal's selector and its variants; peers are the rest.
	ours bool
	// psi ranks C3 by Ψ instead of peak-EWMA cost; concentrate sends every
	// read to one home replica; hedge turns hedged reads on.
	psi, concentrate, hedge bool
}

// oursName is the side that is baedal's selector as it ships.
const oursName = "c3"

// contenders returns our selector, its variants (unless cfg.NoAblations:
// ranked by Ψ, concentrating reads on one home replica, with hedged reads)
// and the peers in cfg.Policies.
func contenders(cfg Config) []contender {
	list := []contender{{name: oursName, policy: replica.PolicyC3, ours: true}}
	if !cfg.NoAblations {
		list = append(list,
			contender{name: "c3-psi", policy: replica.PolicyC3, ours: true, psi: true},
			contender{name: "c3-concentrate", policy: replica.PolicyC3, ours: true, concentrate: true},
			contender{name: "c3-hedge", policy: replica.PolicyC3, ours: true, hedge: true})
	}
	for _, p := range cfg.Policies {
		if p != replica.PolicyC3 {
			list = append(list, contender{name: string(p), policy: p})
		}
	}
	return list
}

// readConfig is the redisread configuration of one contender.
func (k contender) readConfig(cfg Config, scenario string) redisread.Config {
	rc := redisread.Config{Policy: tuned(cfg.Tuning, k.policy, cfg.Seed), Path: scenario + "-" + k.name, PsiRank: k.psi}
	rc.Policy.Concentrate = rc.Policy.Concentrate || k.concentrate
	rc.Hedge.Budget = -1
	if k.hedge {
		rc.Hedge.Budget = replica.DefaultHedgeBudget
		if cfg.HedgeBudget != 0 {
			rc.Hedge.Budget = cfg.HedgeBudget
		}
	}
	return rc
}

// condition is what a scenario does to replica 1 during each side's round:
// begin starts it, the returned end undoes it (end is called even when the
// round failed).
type condition func(ctx context.Context, roundDuration time.Duration) (end func() error, err error)

// stallCondition stops process pid with SIGSTOP for stall every period, the
// first time at period/5 into the round (a quarter of the round when that is
// shorter), and resumes it with SIGCONT: a GC pause or a fork.
func stallCondition(pid int, stall, period time.Duration, stalls *int) condition {
	return func(ctx context.Context, roundDuration time.Duration) (func() error, error) {
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now().Add(min(period/5, roundDuration/4))
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("replbench: SIGSTOP pid %d: %w", pid, err))
					mu.Unlock()
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(stall):
				}
				err := syscall.Kill(pid, syscall.SIGCONT)
				mu.Lock()
				*stalls++
				if err != nil {
					errs = append(errs, fmt.Errorf("replbench: SIGCONT pid %d: %w", pid, err))
				}
				mu.Unlock()
				next = next.Add(period)
			}
		}()
		return func() error {
			cancel()
			wg.Wait()
			// Whatever happened, the process must run again.
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		}, nil
	}
}

// recoverCondition limits process pid to percent% of one core for the first
// half of the round, then removes the limit: a degraded replica recovers and
// the selector must give it its reads back.
func recoverCondition(pid, percent int) condition {
	return func(ctx context.Context, roundDuration time.Duration) (func() error, error) {
		limit, err := LimitCPU(pid, percent)
		if err != nil {
			return nil, err
		}
		var mu sync.Mutex
		var removeErr error
		timer := time.AfterFunc(roundDuration/2, func() {
			mu.Lock()
			removeErr = limit.Remove()
			mu.Unlock()
		})
		return func() error {
			timer.Stop()
			mu.Lock()
			defer mu.Unlock()
			return errors.Join(removeErr, limit.Remove())
		}, nil
	}
}
