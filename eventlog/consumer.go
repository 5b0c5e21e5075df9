package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/catalog"
)

// Entry is one stream entry handed to a consumer.
type Entry struct {
	ID         string // stream id, e.g. "1700000000000-0"
	Partition  int
	Raw        []byte        // the event JSON as appended
	Event      catalog.Event // decoded and validated; zero when Err is set
	Err        error         // why the entry is not a valid event (dead-letter it)
	AppendedAt time.Time     // zero when the entry has no valid "t"
	Deliveries int64         // deliveries to this group, known for re-read entries; 1 for new ones
}

// Consumer reads one partition for one consumer group under a stable
// consumer name, so that a restarted worker finds its own pending entries.
// It is not safe for concurrent use; one goroutine owns one Consumer.
type Consumer struct {
	log       *Log
	group     string
	partition int
	stream    string
	name      string
}

// Consumer returns the consumer of partition p in group. The consumer name is
// "<group>-p<p>": stable per (group, partition).
func (l *Log) Consumer(group string, p int) *Consumer {
	return &Consumer{log: l, group: group, partition: p, stream: l.StreamKey(p), name: group + "-p" + strconv.Itoa(p)}
}

// Name returns the consumer name.
func (c *Consumer) Name() string { return c.name }

// Stream returns the key of the consumer's partition stream.
func (c *Consumer) Stream() string { return c.stream }

// EnsureGroup creates the consumer group (reading from the start of the
// stream) and the stream if they do not exist.
func (c *Consumer) EnsureGroup(ctx context.Context) error {
	err := c.log.rdb.XGroupCreateMkStream(ctx, c.stream, c.group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("eventlog: create group %s on %s: %w", c.group, c.stream, err)
	}
	return nil
}

// ReadPending re-reads up to count of this consumer's own pending entries
// (delivered before, never acknowledged) with ids after the id after ("0":
// from the oldest), oldest first, with their delivery counts. Redis counts
// this re-read as a delivery.
func (c *Consumer) ReadPending(ctx context.Context, after string, count int) ([]Entry, error) {
	entries, err := c.read(ctx, after, count, -1)
	if err != nil || len(entries) == 0 {
		return entries, err
	}
	return entries, c.fillDeliveries(ctx, entries)
}

// ReadNew reads up to count new entries, waiting up to block for the first
// one (0 = do not wait).
func (c *Consumer) ReadNew(ctx context.Context, count int, block time.Duration) ([]Entry, error) {
	if block <= 0 {
		block = -1 // go-redis: omit BLOCK
	}
	entries, err := c.read(ctx, ">", count, block)
	for i := range entries {
		entries[i].Deliveries = 1
	}
	return entries, err
}

func (c *Consumer) read(ctx context.Context, id string, count int, block time.Duration) ([]Entry, error) {
	res, err := c.log.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: c.group, Consumer: c.name, Streams: []string{c.stream, id}, Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: XREADGROUP %s %s id %s: %w", c.group, c.stream, id, err)
	}
	var out []Entry
	for _, s := range res {
		for _, m := range s.Messages {
			out = append(out, c.decode(m))
		}
	}
	return out, nil
}

// Claim takes over up to count entries of the partition that another
// consumer name of the group left pending for longer than minIdle (a worker
// that was scaled in or renamed), with their delivery counts. It never
// claims this consumer's own pending entries: those may be waiting on
// purpose (an indexer holds its acknowledgements until a flush), and
// claiming them would count deliveries toward the dead-letter limit.
func (c *Consumer) Claim(ctx context.Context, minIdle time.Duration, count int) ([]Entry, error) {
	var ids []string
	start := "-"
	for page := 0; page < claimPages && len(ids) < count; page++ {
		pending, err := c.log.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: c.stream, Group: c.group, Idle: minIdle, Start: start, End: "+", Count: int64(count),
		}).Result()
		if err != nil {
			return nil, fmt.Errorf("eventlog: XPENDING %s %s: %w", c.group, c.stream, err)
		}
		for _, p := range pending {
			if p.Consumer != c.name && len(ids) < count {
				ids = append(ids, p.ID)
			}
		}
		if len(pending) < count {
			break
		}
		start = "(" + pending[len(pending)-1].ID
	}
	if len(ids) == 0 {
		return nil, nil
	}
	msgs, err := c.log.rdb.XClaim(ctx, &redis.XClaimArgs{
		Stream: c.stream, Group: c.group, Consumer: c.name, MinIdle: minIdle, Messages: ids,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("eventlog: XCLAIM %s %s: %w", c.group, c.stream, err)
	}
	out := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		if m.Values == nil { // deleted by trimming while pending
			continue
		}
		out = append(out, c.decode(m))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, c.fillDeliveries(ctx, out)
}

// claimPages bounds how many pages of count pending entries one Claim looks
// through for other consumers' entries.
const claimPages = 10

func (c *Consumer) fillDeliveries(ctx context.Context, entries []Entry) error {
	pend, err := c.log.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: c.stream, Group: c.group, Start: entries[0].ID, End: entries[len(entries)-1].ID, Count: int64(len(entries)) + 100,
	}).Result()
	if err != nil {
		return fmt.Errorf("eventlog: XPENDING %s %s: %w", c.group, c.stream, err)
	}
	counts := make(map[string]int64, len(pend))
	for _, p := range pend {
		counts[p.ID] = p.RetryCount
	}
	for i := range entries {
		entries[i].Deliveries = max(1, counts[entries[i].ID])
	}
	return nil
}

func (c *Consumer) decode(m redis.XMessage) Entry {
	e := Entry{ID: m.ID, Partition: c.partition}
	raw, _ := m.Values[fieldEvent].(string)
	e.Raw = []byte(raw)
	if ms, err := strconv.ParseInt(str(m.Values[fieldAppended]), 10, 64); err == nil {
		e.AppendedAt = time.UnixMilli(ms)
	}
	events, err := catalog.ParseEvents(e.Raw)
	switch {
	case err != nil:
		e.Err = err
	case len(events) != 1:
		e.Err = fmt.Errorf("entry holds %d events, want 1", len(events))
	default:
		e.Event = events[0]
	}
	return e
}

// Ack acknowledges entries: they leave the pending list for good.
func (c *Consumer) Ack(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := c.log.rdb.XAck(ctx, c.stream, c.group, ids...).Err(); err != nil {
		return fmt.Errorf("eventlog: XACK %d entries of %s %s: %w", len(ids), c.group, c.stream, err)
	}
	return nil
}

// DeadLetter appends the entries to the partition's dead-letter stream and
// acknowledges them, atomically (MULTI/EXEC; both keys share the
// partition's hash tag, so one slot).
func (c *Consumer) DeadLetter(ctx context.Context, letters []DeadLetter) error {
	if len(letters) == 0 {
		return nil
	}
	_, err := c.log.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		ids := make([]string, len(letters))
		for i, d := range letters {
			ids[i] = d.Entry.ID
			pipe.XAdd(ctx, &redis.XAddArgs{
				Stream: c.log.DeadLetterKey(c.partition), MaxLen: c.log.cfg.MaxLen, Approx: true,
				Values: []any{
					fieldEvent, d.Entry.Raw, "stream", c.stream, "entry_id", d.Entry.ID, "group", c.group,
					"reason", d.Reason, "attempts", strconv.FormatInt(d.Entry.Deliveries, 10),
					fieldAppended, strconv.FormatInt(time.Now().UnixMilli(), 10),
				},
			})
		}
		pipe.XAck(ctx, c.stream, c.group, ids...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("eventlog: dead-letter %d entries of %s %s: %w", len(letters), c.group, c.stream, err)
	}
	for _, d := range letters {
		c.log.dead.WithLabelValues(ReasonKind(d.Reason)).Inc()
		c.log.log.Warn("event dead-lettered", "stream", c.stream, "group", c.group, "entry", d.Entry.ID, "attempts", d.Entry.Deliveries, "reason", d.Reason)
	}
	return nil
}

// Lag returns the group's lag on this partition, entries appended but not
// yet delivered to the group (Backlog's Entries), and its pending entries.
func (c *Consumer) Lag(ctx context.Context) (lag, pending int64, err error) {
	b, err := c.Backlog(ctx)
	return b.Entries, b.Pending, err
}

// Backlog is what a consumer group has not processed yet on one partition.
type Backlog struct {
	// Entries appended but not yet delivered to the group. Counted exactly
	// up to backlogCounted; above that, XINFO GROUPS "lag" bounded by the
	// stream's length (Redis 7.0 keeps counting entries trimmed before the
	// group read them, for good); -1 when Redis cannot tell.
	Entries int64
	// Pending entries: delivered, not acknowledged.
	Pending int64
	// OldestUndelivered is the age of the first entry not yet delivered to
	// the group, from its id's timestamp; 0 when there is none.
	OldestUndelivered time.Duration
}

// backlogCounted is how many undelivered entries Backlog counts one by one.
const backlogCounted = 100

// Backlog returns the group's backlog on this partition.
func (c *Consumer) Backlog(ctx context.Context) (Backlog, error) {
	pipe := c.log.rdb.Pipeline()
	groupsCmd := pipe.XInfoGroups(ctx, c.stream)
	lenCmd := pipe.XLen(ctx, c.stream)
	if _, err := pipe.Exec(ctx); err != nil {
		return Backlog{}, fmt.Errorf("eventlog: XINFO GROUPS %s: %w", c.stream, err)
	}
	for _, g := range groupsCmd.Val() {
		if g.Name != c.group {
			continue
		}
		next, err := c.log.rdb.XRangeN(ctx, c.stream, "("+g.LastDeliveredID, "+", backlogCounted).Result()
		if err != nil {
			return Backlog{}, fmt.Errorf("eventlog: XRANGE %s: %w", c.stream, err)
		}
		b := Backlog{Entries: int64(len(next)), Pending: g.Pending}
		if len(next) == backlogCounted {
			b.Entries = max(backlogCounted, min(g.Lag, lenCmd.Val()))
			if g.Lag < 0 {
				b.Entries = -1
			}
		}
		if len(next) > 0 {
			if ms, ok := entryMillis(next[0].ID); ok {
				b.OldestUndelivered = max(0, time.Since(time.UnixMilli(ms)))
			}
		}
		return b, nil
	}
	return Backlog{}, fmt.Errorf("eventlog: group %s not found on %s", c.group, c.stream)
}

// entryMillis returns the milliseconds part of a stream entry id ("ms-seq").
func entryMillis(id string) (int64, bool) {
	ms, _, ok := strings.Cut(id, "-")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(ms, 10, 64)
	return v, err == nil
}

// Partition returns the consumer's partition.
func (c *Consumer) Partition() int { return c.partition }
