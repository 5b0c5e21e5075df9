package feed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// batchWorld is a seeded social graph rebuilt into Redis for one strategy,
// with services reading it in different ways.
type batchWorld struct {
	b     testBackends
	cfg   Config // the strategy's configuration (prefix, threshold)
	users int64
}

// newBatchWorld seeds a power-law graph of users (celebrities have at least
// 12 followers, so hybrid both pulls and pushes) and rebuilds it into Redis
// for the strategy.
func newBatchWorld(t *testing.T, st Strategy) batchWorld {
	t.Helper()
	b := newBackends(t)
	w := batchWorld{b: b, cfg: testConfig(st, b.prefix+string(st)+":"), users: 300}
	w.cfg.CelebrityThreshold = 12
	svc := newService(t, b, w.cfg)
	ctx := context.Background()
	seed := SeedConfig{Preset: PresetSocial, Users: int(w.users), PostsPerUser: 4, Seed: 3, Reset: true}
	if _, err := SeedAndRebuild(ctx, svc, seed, io.Discard); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if st == StrategyHybrid {
		n, err := b.rdb.SCard(ctx, svc.keys.celebrities).Result()
		if err != nil || n == 0 {
			t.Fatalf("the seeded graph has %d celebrities (%v): hybrid would pull nothing", n, err)
		}
	}
	return w
}

// service returns a service on the world's data with the read batching
// and post cache settings.
func (w batchWorld) service(t *testing.T, readBatch, inFlight, postCache int) *Service {
	t.Helper()
	cfg := w.cfg
	cfg.ReadBatch, cfg.ReadBatchesInFlight, cfg.PostCacheEntries = readBatch, inFlight, postCache
	svc, err := NewService(cfg, w.b.db, w.b.rdb, nil, nil)
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	return svc
}

// pageKey is one feed request.
type pageKey struct {
	user, before int64
	limit        int
}

// rawPageText renders a page for comparison: its cursor and payloads.
func rawPageText(p RawPage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "next=%d", p.NextBefore)
	for _, post := range p.Posts {
		b.WriteByte('\n')
		b.Write(post)
	}
	return b.String()
}

// expectedPages reads every user's first two pages (limit 7) with svc, one
// read at a time.
func expectedPages(t *testing.T, svc *Service, users int64) map[pageKey]string {
	t.Helper()
	ctx := context.Background()
	want := map[pageKey]string{}
	nonEmpty := 0
	for u := int64(1); u <= users; u++ {
		before := int64(0)
		for range 2 {
			k := pageKey{u, before, 7}
			p, err := svc.FeedRaw(ctx, k.user, k.before, k.limit)
			if err != nil {
				t.Fatalf("FeedRaw(%v): %v", k, err)
			}
			want[k] = rawPageText(p)
			if len(p.Posts) > 0 {
				nonEmpty++
			}
			if before = p.NextBefore; before == 0 {
				break
			}
		}
	}
	if nonEmpty < int(users)/2 {
		t.Fatalf("only %d non-empty pages for %d users: the data exercise too little", nonEmpty, users)
	}
	return want
}

// countingReads routes svc's reads to rdb and counts the read function's
// calls; each call waits for pass (close it to let every call through), and
// fails after 10 s.
type countingReads struct {
	calls atomic.Int32
	pass  chan struct{}
}

func useCountingReads(svc *Service, rdb redis.UniversalClient) *countingReads {
	c := &countingReads{pass: make(chan struct{})}
	svc.UseReadClient(func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
		c.calls.Add(1)
		select {
		case <-c.pass:
		case <-time.After(10 * time.Second):
			return errors.New("test: the read function was held for 10 s")
		}
		return read(ctx, rdb)
	})
	return c
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// queued returns the number of reads waiting in svc's batcher.
func queued(svc *Service) int {
	svc.batch.mu.Lock()
	defer svc.batch.mu.Unlock()
	return len(svc.batch.queue)
}

// batchLoops counts the goroutines running a batch loop.
func batchLoops() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "(*readBatcher).loop")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitNoBatchLoops fails the test if batch loop goroutines are left.
func waitNoBatchLoops(t *testing.T) {
	t.Helper()
	waitFor(t, "the batch loops to end", func() bool { return batchLoops() == 0 })
}

// TestBatchedReadsMatchUnbatched reads every user's first two pages from
// many goroutines at once through batching services (small and large
// batches, one or several in flight, with and without the post cache) and
// checks each page is byte for byte what a service reading one page at a
// time without batching returns. Reads really share pipelines (fewer calls
// of the read function than reads), and no batch loop is left afterwards.
func TestBatchedReadsMatchUnbatched(t *testing.T) {
	for _, st := range []Strategy{StrategyPush, StrategyHybrid} {
		t.Run(string(st), func(t *testing.T) {
			w := newBatchWorld(t, st)
			want := expectedPages(t, w.service(t, -1, 1, -1), w.users)
			for _, v := range []struct{ batch, inFlight, cache int }{{4, 2, -1}, {64, 1, -1}, {64, 4, 0}} {
				t.Run(fmt.Sprintf("batch=%d/in-flight=%d/cache=%d", v.batch, v.inFlight, v.cache), func(t *testing.T) {
					svc := w.service(t, v.batch, v.inFlight, v.cache)
					reads := useCountingReads(svc, w.b.rdb)
					close(reads.pass)
					var feeds atomic.Int32
					const goroutines = 24
					var wg sync.WaitGroup
					errs := make(chan error, goroutines)
					for g := range goroutines {
						wg.Go(func() {
							rng := rand.New(rand.NewPCG(uint64(g), 5))
							for _, u := range rng.Perm(int(w.users)) {
								before := int64(0)
								for range 2 {
									k := pageKey{int64(u) + 1, before, 7}
									p, err := svc.FeedRaw(context.Background(), k.user, k.before, k.limit)
									feeds.Add(1)
									if err != nil {
										errs <- fmt.Errorf("FeedRaw(%v): %w", k, err)
										return
									}
									if got := rawPageText(p); got != want[k] {
										errs <- fmt.Errorf("FeedRaw(%v):\n got %.300s\nwant %.300s", k, got, want[k])
										return
									}
									if before = p.NextBefore; before == 0 {
										break
									}
								}
							}
						})
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Error(err)
					}
					calls := reads.calls.Load()
					t.Logf("%d feed reads in %d pipelines", feeds.Load(), calls)
					if calls >= feeds.Load() {
						t.Errorf("%d feed reads took %d calls of the read function: nothing was batched", feeds.Load(), calls)
					}
					waitNoBatchLoops(t)
				})
			}
		})
	}
}

// TestBatchFailsOnlyTheFailedRead puts ten reads into one pipeline, one of
// them on a user whose timeline is not a sorted set (WRONGTYPE): only that
// read fails, the others return their pages.
func TestBatchFailsOnlyTheFailedRead(t *testing.T) {
	for _, st := range []Strategy{StrategyPush, StrategyHybrid} {
		t.Run(string(st), func(t *testing.T) {
			w := newBatchWorld(t, st)
			ctx := context.Background()
			want := expectedPages(t, w.service(t, -1, 1, -1), w.users)
			svc := w.service(t, 64, 1, 0)
			const bad = int64(7)
			if err := w.b.rdb.Set(ctx, svc.keys.timeline(bad), "not a timeline", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// Warm the post cache, so each read below is one command.
			for u := int64(1); u <= 10; u++ {
				if u != bad {
					if _, err := svc.FeedRaw(ctx, u, 0, 7); err != nil {
						t.Fatal(err)
					}
				}
			}
			reads := useCountingReads(svc, w.b.rdb)
			// The first read holds the only batch loop in the read function
			// until the next ten are queued: they go in one pipeline.
			first := make(chan error, 1)
			go func() {
				_, err := svc.FeedRaw(ctx, 1, 0, 7)
				first <- err
			}()
			waitFor(t, "the first batch", func() bool { return reads.calls.Load() == 1 })
			type result struct {
				user int64
				page RawPage
				err  error
			}
			results := make(chan result, 10)
			for u := int64(1); u <= 10; u++ {
				go func() {
					p, err := svc.FeedRaw(ctx, u, 0, 7)
					results <- result{u, p, err}
				}()
			}
			waitFor(t, "ten queued reads", func() bool { return queued(svc) == 10 })
			close(reads.pass)
			if err := <-first; err != nil {
				t.Fatalf("first read: %v", err)
			}
			for range 10 {
				r := <-results
				switch {
				case r.user == bad:
					if r.err == nil || !strings.Contains(r.err.Error(), "WRONGTYPE") {
						t.Errorf("user %d (corrupt timeline): err %v, want WRONGTYPE", r.user, r.err)
					}
				case r.err != nil:
					t.Errorf("user %d: %v", r.user, r.err)
				case rawPageText(r.page) != want[pageKey{r.user, 0, 7}]:
					t.Errorf("user %d: wrong page %.200s", r.user, rawPageText(r.page))
				}
			}
			if n := reads.calls.Load(); n != 2 {
				t.Errorf("%d calls of the read function, want 2 (the first read, then one pipeline of ten)", n)
			}
			waitNoBatchLoops(t)
		})
	}
}

// TestBatchedReadHonoursContext: a caller whose context ends while its
// command waits in the queue, or while its pipeline is on the wire, gets its
// context's error at once; the pipeline still completes for the others.
func TestBatchedReadHonoursContext(t *testing.T) {
	w := newBatchWorld(t, StrategyHybrid)
	want := expectedPages(t, w.service(t, -1, 1, -1), w.users)
	svc := w.service(t, 64, 1, 0)
	ctx := context.Background()
	for u := int64(1); u <= 5; u++ { // warm the cache: one command per read
		if _, err := svc.FeedRaw(ctx, u, 0, 7); err != nil {
			t.Fatal(err)
		}
	}
	reads := useCountingReads(svc, w.b.rdb)
	pass := func() { reads.pass <- struct{}{} }

	// A holds the batch loop; X (cancelled later) and Y queue behind it.
	type result struct {
		page RawPage
		err  error
	}
	read := func(ctx context.Context, user int64) chan result {
		c := make(chan result, 1)
		go func() {
			p, err := svc.FeedRaw(ctx, user, 0, 7)
			c <- result{p, err}
		}()
		return c
	}
	a := read(ctx, 1)
	waitFor(t, "A's batch", func() bool { return reads.calls.Load() == 1 })
	queuedCtx, cancelQueued := context.WithCancel(ctx)
	q := read(queuedCtx, 2)
	waitFor(t, "Q queued", func() bool { return queued(svc) == 1 })
	cancelQueued()
	select {
	case r := <-q:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("read cancelled in the queue: err %v, want context.Canceled", r.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a read cancelled in the queue still waits")
	}
	xCtx, cancelX := context.WithCancel(ctx)
	x := read(xCtx, 3)
	y := read(ctx, 4)
	waitFor(t, "X and Y queued behind Q", func() bool { return queued(svc) == 3 })
	pass() // A's pipeline
	if r := <-a; r.err != nil || rawPageText(r.page) != want[pageKey{1, 0, 7}] {
		t.Fatalf("A: %v", r.err)
	}
	// The loop takes X and Y (Q, cancelled, was dropped) and waits in the
	// read function.
	waitFor(t, "X and Y's batch", func() bool { return reads.calls.Load() == 2 && queued(svc) == 0 })
	cancelX()
	select {
	case r := <-x:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("read cancelled on the wire: err %v, want context.Canceled", r.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a read cancelled while its pipeline was on the wire still waits")
	}
	select {
	case r := <-y:
		t.Fatalf("Y returned before its pipeline ran: %v", r.err)
	default:
	}
	deadlineCtx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	d := read(deadlineCtx, 5)
	if r := <-d; !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("read past its deadline: err %v, want context.DeadlineExceeded", r.err)
	}
	close(reads.pass)
	if r := <-y; r.err != nil || rawPageText(r.page) != want[pageKey{4, 0, 7}] {
		t.Fatalf("Y, batched with the cancelled X: %v %.200s", r.err, rawPageText(r.page))
	}
	waitNoBatchLoops(t)
	if p, err := svc.FeedRaw(ctx, 3, 0, 7); err != nil || rawPageText(p) != want[pageKey{3, 0, 7}] {
		t.Fatalf("X read again: %v", err)
	}
}

// TestBatchedReadErrorsOfTheReadFunc: when the read function fails without
// running the pipeline every caller gets its error; a panic in it is an
// error too, not a crash of the process; when it wraps the
// pipeline's error (as the replica selector does when every server failed)
// the callers whose command failed get the wrapped error, the others their
// replies.
func TestBatchedReadErrorsOfTheReadFunc(t *testing.T) {
	w := newBatchWorld(t, StrategyPush)
	ctx := context.Background()
	want := expectedPages(t, w.service(t, -1, 1, -1), w.users)
	svc := w.service(t, 64, 1, 0)
	down := errors.New("every server is down")
	svc.UseReadClient(func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
		return down
	})
	if _, err := svc.FeedRaw(ctx, 1, 0, 7); !errors.Is(err, down) {
		t.Fatalf("read through a failing read function: err %v, want %v", err, down)
	}
	svc.UseReadClient(func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
		panic("read function bug")
	})
	if _, err := svc.FeedRaw(ctx, 1, 0, 7); err == nil || !strings.Contains(err.Error(), "panicked: read function bug") {
		t.Fatalf("read through a panicking read function: err %v, want the panic as an error", err)
	}
	waitNoBatchLoops(t)
	const bad = int64(2)
	if err := w.b.rdb.Set(ctx, svc.keys.timeline(bad), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	svc.UseReadClient(func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
		if err := read(ctx, w.b.rdb); err != nil {
			return fmt.Errorf("wrapped by the read function: %w", err)
		}
		return nil
	})
	var wg sync.WaitGroup
	for u := int64(1); u <= 20; u++ {
		wg.Go(func() {
			p, err := svc.FeedRaw(ctx, u, 0, 7)
			switch {
			case u == bad:
				if err == nil || !strings.Contains(err.Error(), "wrapped by the read function") || !strings.Contains(err.Error(), "WRONGTYPE") {
					t.Errorf("user %d: err %v, want the read function's error wrapping WRONGTYPE", u, err)
				}
			case err != nil:
				t.Errorf("user %d: %v", u, err)
			case rawPageText(p) != want[pageKey{u, 0, 7}]:
				t.Errorf("user %d: wrong page", u)
			}
		})
	}
	wg.Wait()
}

// TestReadsAloneWhenBatchingIsOff: with ReadBatch -1 every read is its own
// call of the read function, concurrent reads return the unbatched pages,
// and the hybrid read survives SCRIPT FLUSH.
func TestReadsAloneWhenBatchingIsOff(t *testing.T) {
	w := newBatchWorld(t, StrategyHybrid)
	ctx := context.Background()
	want := expectedPages(t, w.service(t, -1, 1, -1), w.users)
	svc := w.service(t, -1, 1, 0)
	if svc.batch != nil {
		t.Fatal("ReadBatch -1 built a batcher")
	}
	for u := int64(1); u <= 30; u++ { // warm the cache: one command per read
		if _, err := svc.FeedRaw(ctx, u, 0, 7); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.b.rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	reads := useCountingReads(svc, w.b.rdb)
	close(reads.pass)
	var wg sync.WaitGroup
	for u := int64(1); u <= 30; u++ {
		wg.Go(func() {
			p, err := svc.FeedRaw(ctx, u, 0, 7)
			if err != nil || rawPageText(p) != want[pageKey{u, 0, 7}] {
				t.Errorf("user %d: %v %.200s", u, err, rawPageText(p))
			}
		})
	}
	wg.Wait()
	if n := reads.calls.Load(); n != 30 {
		t.Errorf("30 reads took %d calls of the read function, want 30", n)
	}
	if batchLoops() != 0 {
		t.Error("batch loops run with batching off")
	}
}

// TestBatchedReadOnClosedClient: once the Redis client is closed (the
// service shutting down), reads fail with the client's error instead of
// hanging, and no batch loop is left.
func TestBatchedReadOnClosedClient(t *testing.T) {
	w := newBatchWorld(t, StrategyHybrid)
	rdb := redis.NewClient(&redis.Options{Addr: w.b.rdb.(*redis.Client).Options().Addr})
	svc, err := NewService(w.cfg, w.b.db, rdb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := svc.FeedRaw(ctx, 1, 0, 7); err != nil {
		t.Fatal(err)
	}
	rdb.Close()
	var wg sync.WaitGroup
	for u := int64(1); u <= 10; u++ {
		wg.Go(func() {
			_, err := svc.FeedRaw(ctx, u, 0, 7)
			if !errors.Is(err, redis.ErrClosed) {
				t.Errorf("user %d after Close: err %v, want %v", u, err, redis.ErrClosed)
			}
		})
	}
	wg.Wait()
	waitNoBatchLoops(t)
}
