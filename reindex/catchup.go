package reindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/layout"
)

// entryEventField is the stream entry field holding the event JSON (see
// eventlog/log.go; TestReplayReadsAppendedEvents catches a rename).
const entryEventField = "e"

// StreamID is a Redis stream entry id "<ms>-<seq>".
type StreamID struct{ Ms, Seq uint64 }

// ParseStreamID parses "<ms>-<seq>" (or "<ms>").
func ParseStreamID(s string) (StreamID, error) {
	msPart, seqPart, hasSeq := strings.Cut(s, "-")
	ms, err := strconv.ParseUint(msPart, 10, 64)
	if err != nil {
		return StreamID{}, fmt.Errorf("reindex: stream id %q: %w", s, err)
	}
	var seq uint64
	if hasSeq {
		if seq, err = strconv.ParseUint(seqPart, 10, 64); err != nil {
			return StreamID{}, fmt.Errorf("reindex: stream id %q: %w", s, err)
		}
	}
	return StreamID{ms, seq}, nil
}

func (id StreamID) String() string {
	return strconv.FormatUint(id.Ms, 10) + "-" + strconv.FormatUint(id.Seq, 10)
}

// Before returns the greatest id smaller than id (0-0 stays 0-0), so that
// reading after it starts at id.
func (id StreamID) Before() StreamID {
	switch {
	case id.Seq > 0:
		return StreamID{id.Ms, id.Seq - 1}
	case id.Ms > 0:
		return StreamID{id.Ms - 1, ^uint64(0)}
	}
	return id
}

// Less orders ids.
func (id StreamID) Less(o StreamID) bool {
	return id.Ms < o.Ms || (id.Ms == o.Ms && id.Seq < o.Seq)
}

// replayStart returns, for every partition, the id after which the catch-up
// must replay: everything up to it was acknowledged by the live indexer's
// consumer group of kind, so it is in the source (after a refresh). A
// partition whose group does not exist replays after its last entry (no
// indexer applies that log to the source).
func replayStart(ctx context.Context, evlog *eventlog.Log, kind layout.Kind) ([]string, error) {
	rdb := evlog.Redis()
	group := indexer.GroupName(kind)
	out := make([]string, evlog.Config().Partitions)
	for p := range out {
		stream := evlog.StreamKey(p)
		groups, err := rdb.XInfoGroups(ctx, stream).Result()
		if err != nil && !isNoSuchKey(err) {
			return nil, fmt.Errorf("reindex: XINFO GROUPS %s: %w", stream, err)
		}
		var found *redis.XInfoGroup
		for i := range groups {
			if groups[i].Name == group {
				found = &groups[i]
			}
		}
		if found == nil {
			last, err := lastEntryID(ctx, rdb, stream)
			if err != nil {
				return nil, err
			}
			out[p] = last
			continue
		}
		after := found.LastDeliveredID
		if found.Pending > 0 {
			pend, err := rdb.XPending(ctx, stream, group).Result()
			if err != nil {
				return nil, fmt.Errorf("reindex: XPENDING %s %s: %w", stream, group, err)
			}
			if pend.Count > 0 {
				lower, err := ParseStreamID(pend.Lower)
				if err != nil {
					return nil, err
				}
				after = lower.Before().String()
			}
		}
		out[p] = after
	}
	return out, nil
}

func isNoSuchKey(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such key")
}

// lastEntryID returns the id of a stream's last entry, "0-0" when empty.
func lastEntryID(ctx context.Context, rdb redis.UniversalClient, stream string) (string, error) {
	msgs, err := rdb.XRevRangeN(ctx, stream, "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("reindex: last entry of %s: %w", stream, err)
	}
	if len(msgs) == 0 {
		return "0-0", nil
	}
	return msgs[0].ID, nil
}

// replayer applies log entries to one destination through a catch-up alias.
type replayer struct {
	o     *Orchestrator
	job   Status
	kind  layout.Kind
	ix    *indexer.Indexer
	phase string // cursor namespace: "fwd", "post", "back", "backpost"
}

// catchUpPrefix is the prefix of the catch-up aliases into dest: the alias
// <dest>_cu_<role> points the role at dest.
func catchUpPrefix(dest string) string { return dest + "_cu_" }

// newReplayer points the catch-up aliases of the layout at dest for the
// job's role and at the current index of every other role, and returns an
// indexer that writes through them.
func (o *Orchestrator) newReplayer(ctx context.Context, job Status, dest, phase string) (*replayer, error) {
	kind := kindOf(job.Role)
	cl := o.cfg.Layout
	cl.Prefix = catchUpPrefix(dest)
	points := map[string]string{}
	for _, alias := range o.cfg.Layout.Aliases(kind) {
		role := strings.TrimPrefix(alias, o.cfg.Layout.Prefix)
		if role == job.Role {
			points[cl.Alias(role)] = dest
			continue
		}
		other, err := aliasTarget(ctx, o.os, alias)
		if err != nil {
			return nil, err
		}
		points[cl.Alias(role)] = other
	}
	if err := pointAliases(ctx, o.os, points); err != nil {
		return nil, err
	}
	icfg := indexer.Defaults()
	icfg.Layouts = []layout.Kind{kind}
	icfg.Layout, icfg.Log = cl, o.cfg.Log
	icfg.BatchSize = o.cfg.CatchUpBatch
	icfg.RefetchOnGap = true
	ix, err := indexer.New(icfg, kind, o.os, o.log.With("catchup", dest), nil)
	if err != nil {
		return nil, err
	}
	return &replayer{o: o, job: job, kind: kind, ix: ix, phase: phase}, nil
}

// catchUpAliases lists the catch-up aliases into dest (to remove them).
func (o *Orchestrator) catchUpAliases(job Status, dest string) []string {
	cl := o.cfg.Layout
	cl.Prefix = catchUpPrefix(dest)
	var out []string
	for _, alias := range o.cfg.Layout.Aliases(kindOf(job.Role)) {
		out = append(out, cl.Alias(strings.TrimPrefix(alias, o.cfg.Layout.Prefix)))
	}
	return out
}

// cursors returns the phase's persisted cursors, or from when none is set.
func (r *replayer) cursors(fields map[string]string, from []string) []string {
	out := make([]string, len(from))
	for p := range from {
		if c, ok := fields[fCursor+r.phase+":"+strconv.Itoa(p)]; ok {
			out[p] = c
		} else {
			out[p] = from[p]
		}
	}
	return out
}

// pass replays every partition from its cursor to the entries present when
// the pass reads them, persisting the cursor after each batch, and returns
// the number of entries replayed. Partitions run in parallel (they hold
// disjoint shops; the indexer allows that).
func (r *replayer) pass(ctx context.Context, cursors []string) (int64, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	errs := make([]error, len(cursors))
	for p := range cursors {
		wg.Go(func() {
			n, err := r.partition(ctx, p, &cursors[p])
			mu.Lock()
			total += n
			mu.Unlock()
			errs[p] = err
		})
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

func (r *replayer) partition(ctx context.Context, p int, cursor *string) (int64, error) {
	stream := r.o.evlog.StreamKey(p)
	end, err := lastEntryID(ctx, r.o.rdb, stream)
	if err != nil {
		return 0, err
	}
	endID, err := ParseStreamID(end)
	if err != nil {
		return 0, err
	}
	var replayed int64
	for {
		cur, err := ParseStreamID(*cursor)
		if err != nil {
			return replayed, err
		}
		if !cur.Less(endID) {
			return replayed, nil
		}
		msgs, err := r.o.rdb.XRangeN(ctx, stream, "("+*cursor, end, int64(r.o.cfg.CatchUpBatch)).Result()
		if err != nil {
			return replayed, fmt.Errorf("reindex: XRANGE %s after %s: %w", stream, *cursor, err)
		}
		if len(msgs) == 0 {
			return replayed, nil
		}
		events := make([]catalog.Event, 0, len(msgs))
		var invalid int64
		for _, m := range msgs {
			raw, _ := m.Values[entryEventField].(string)
			evs, err := catalog.ParseEvents([]byte(raw))
			if err != nil || len(evs) != 1 {
				invalid++ // the live indexer dead-letters it too
				continue
			}
			events = append(events, evs[0])
		}
		st, err := r.ix.Apply(ctx, events)
		if err != nil {
			return replayed, fmt.Errorf("reindex: catch-up of %s entries after %s: %w", stream, *cursor, err)
		}
		*cursor = msgs[len(msgs)-1].ID
		replayed += int64(len(msgs))
		r.o.m.catchUp.Add(float64(len(msgs)))
		if err := r.o.store.set(ctx, r.job.ID, fCursor+r.phase+":"+strconv.Itoa(p), *cursor); err != nil {
			return replayed, err
		}
		if err := r.o.store.addCount(ctx, r.job.ID, fCatchUp, int64(len(msgs))); err != nil {
			return replayed, err
		}
		if err := r.o.store.addCount(ctx, r.job.ID, fRejected, int64(len(st.Rejected))+invalid); err != nil {
			return replayed, err
		}
	}
}

func kindOf(role string) layout.Kind {
	switch role {
	case layout.RoleNested:
		return layout.Nested
	case layout.RoleHotShops, layout.RoleHotMenus:
		return layout.Hot
	}
	return layout.Split
}

// swapReadyWithin: the dual-write swaps once the tailer reached the log's
// end read at most this long before (else it reads the end again, for up to
// dualWriteSettle; then it swaps with the lag it has: the post-swap
// catch-up covers any lag, a smaller one only narrows the residual window
// described in the package doc).
const (
	swapReadyWithin = 200 * time.Millisecond
	dualWriteSettle = 5 * time.Second
)

// tailer is the catch-up side of the dual-write: it replays the log into one
// index in back-to-back passes (a pass that finds nothing new waits 10 ms)
// until stopped, and publishes its position after every pass.
type tailer struct {
	mu      sync.Mutex
	pos     []string
	failure error
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

func startTailer(ctx context.Context, r *replayer, cursors []string) *tailer {
	ctx, cancel := context.WithCancel(ctx)
	t := &tailer{pos: slices.Clone(cursors), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		cur := slices.Clone(cursors)
		for ctx.Err() == nil {
			n, err := r.pass(ctx, cur)
			t.mu.Lock()
			t.pos = slices.Clone(cur)
			if err != nil && ctx.Err() == nil {
				t.failure = err
			}
			t.mu.Unlock()
			if err != nil {
				return
			}
			if n == 0 {
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}()
	return t
}

// position returns the entries up to which every partition was replayed.
func (t *tailer) position() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.pos)
}

func (t *tailer) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failure
}

// waitFor waits until the tailer replayed every partition up to end.
func (t *tailer) waitFor(ctx context.Context, end []string, deadline time.Time) error {
	for {
		t.mu.Lock()
		pos, failure := slices.Clone(t.pos), t.failure
		t.mu.Unlock()
		if failure != nil {
			return failure
		}
		if reached(pos, end) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the catch-up stands at %v, behind the log's end %v, at the deadline (the log grows faster than it is replayed?)", pos, end)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.done:
			if err := t.err(); err != nil {
				return err
			}
			return fmt.Errorf("the catch-up stopped at %v before the log's end %v", t.position(), end)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// stop ends the tailer and returns its final position.
func (t *tailer) stop() []string {
	t.once.Do(func() {
		t.cancel()
		<-t.done
	})
	return t.position()
}
