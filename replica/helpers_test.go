package replica

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func newTestPolicy(t testing.TB, replicas int, cfg Config) Policy {
	t.Helper()
	p, err := New(replicas, cfg)
	if err != nil {
		t.Fatalf("New(%d, %+v): %v", replicas, cfg, err)
	}
	return p
}

// complete runs one request on replica r: Start then Done with res.
func complete(p Policy, r int, res Result) {
	p.Start(r)
	p.Done(r, res)
}

func ok(latency time.Duration) Result { return Result{Latency: latency} }

func okWithServer(latency, service time.Duration, queue float64) Result {
	return Result{Latency: latency, ServiceTime: service, HasServiceTime: true, QueueLen: queue, HasQueueLen: true}
}

func statsOf(p Policy, r int) ReplicaStats { return p.Snapshot(nil)[r] }

// almostEqual compares durations to within 1µs (EWMAs are kept as float
// seconds).
func almostEqual(a, b time.Duration) bool {
	d := a - b
	return d > -time.Microsecond && d < time.Microsecond
}
