package eventlog

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/promreg"
	"github.com/baedal/baedal/internal/rediswait"
)

// Config says where the log lives and how it is trimmed.
type Config struct {
	// Prefix is put before every key, e.g. "baedal:" gives "baedal:events:0".
	Prefix string
	// Partitions is the number of streams; shop id mod Partitions picks one.
	// Changing it moves shops between partitions: drain the log first.
	Partitions int
	// MaxLen is the approximate length cap of each partition stream.
	MaxLen int64
	// AppendChunk is how many XADDs one pipeline round trip carries.
	AppendChunk int
	// WaitReplicas, when above 0, makes Append return only after that many
	// replicas of each written primary have the appends (WAIT behind the
	// XADDs, on their connection), so an event answered 202 survives the
	// death of its primary. WaitTimeout bounds the wait; fewer replicas
	// in time is a NotReplicatedError (503 with Retry-After).
	WaitReplicas int
	WaitTimeout  time.Duration
}

// Defaults returns 4 partitions, a 5,000,000-entry cap per partition and
// pipelines of 1,000 appends.
func Defaults() Config {
	return Config{Prefix: "baedal:", Partitions: 4, MaxLen: 5_000_000, AppendChunk: 1000, WaitTimeout: time.Second}
}

// Flags binds the configuration to command-line flags.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Prefix, "eventlog-prefix", c.Prefix, "prefix of the event log's Redis keys")
	fs.IntVar(&c.Partitions, "eventlog-partitions", c.Partitions, "number of event streams (shop id mod N); change only on an empty log")
	fs.Int64Var(&c.MaxLen, "eventlog-max-len", c.MaxLen, "approximate length cap of each event stream")
	fs.IntVar(&c.AppendChunk, "eventlog-append-chunk", c.AppendChunk, "appends per Redis pipeline")
	fs.IntVar(&c.WaitReplicas, "eventlog-wait-replicas", c.WaitReplicas, "answer an append only after this many replicas of its primary have it (Redis WAIT; 0: do not wait)")
	fs.DurationVar(&c.WaitTimeout, "eventlog-wait-timeout", c.WaitTimeout, "how long an append waits for --eventlog-wait-replicas replicas before it fails with 503")
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	if c.Partitions < 1 || c.Partitions > 1024 {
		return fmt.Errorf("eventlog-partitions: got %d, allowed: 1..1024", c.Partitions)
	}
	if c.MaxLen < 1000 {
		return fmt.Errorf("eventlog-max-len: got %d, allowed: >= 1000", c.MaxLen)
	}
	if c.AppendChunk < 1 || c.AppendChunk > 100_000 {
		return fmt.Errorf("eventlog-append-chunk: got %d, allowed: 1..100000", c.AppendChunk)
	}
	if c.WaitReplicas < 0 || c.WaitReplicas > 8 {
		return fmt.Errorf("eventlog-wait-replicas: got %d, allowed: 0..8", c.WaitReplicas)
	}
	if c.WaitReplicas > 0 && (c.WaitTimeout < time.Millisecond || c.WaitTimeout > time.Minute) {
		return fmt.Errorf("eventlog-wait-timeout: got %s, allowed: 1ms..1m", c.WaitTimeout)
	}
	return nil
}

// Entry fields.
const (
	fieldEvent    = "e"
	fieldAppended = "t"
)

// Log appends to and reads from the partition streams.
type Log struct {
	cfg      Config
	rdb      redis.UniversalClient
	log      *slog.Logger
	appended prometheus.Counter
	// dead counts dead-lettered entries by reason kind (ReasonKind).
	dead *prometheus.CounterVec
}

// New returns a Log on rdb. reg may be nil.
func New(cfg Config, rdb redis.UniversalClient, log *slog.Logger, reg prometheus.Registerer) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rdb == nil {
		return nil, errors.New("eventlog: nil Redis client")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Log{
		cfg: cfg, rdb: rdb, log: log,
		appended: prometheus.NewCounter(prometheus.CounterOpts{Name: "baedal_eventlog_appended_total", Help: "Events appended to the event log."}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_eventlog_dead_lettered_total", Help: "Entries moved to the dead-letter stream, by reason (see eventlog.ReasonKind).",
		}, []string{"reason"}),
	}
	if reg != nil {
		l.appended = promreg.RegisterOrReuse(reg, l.appended)
		l.dead = promreg.RegisterOrReuse(reg, l.dead)
	}
	return l, nil
}

// Config returns the log's configuration.
func (l *Log) Config() Config { return l.cfg }

// Redis returns the client the log uses.
func (l *Log) Redis() redis.UniversalClient { return l.rdb }

// Partition returns the partition of a shop aggregate.
func (l *Log) Partition(shopID int64) int {
	p := shopID % int64(l.cfg.Partitions)
	if p < 0 {
		p = -p
	}
	return int(p)
}

// StreamKey returns the key of partition p: {<prefix>events:<p>}, its own
// hash tag, so the partitions spread over a cluster's slots.
func (l *Log) StreamKey(p int) string { return "{" + l.cfg.Prefix + "events:" + strconv.Itoa(p) + "}" }

// DeadLetterKey returns the key of partition p's dead-letter stream,
// {<prefix>events:<p>}:dead: the partition's hash tag, so that dead-lettering
// (XADD here, XACK there) and a replay (XADD there, XDEL here) are one
// MULTI/EXEC within one slot.
func (l *Log) DeadLetterKey(p int) string { return l.StreamKey(p) + ":dead" }

// legacyStreamKey and legacyDeadLetterKey are the keys before hash tags
// (<prefix>events:<p>, one <prefix>events:dead for every partition).
func (l *Log) legacyStreamKey(p int) string { return l.cfg.Prefix + "events:" + strconv.Itoa(p) }
func (l *Log) legacyDeadLetterKey() string  { return l.cfg.Prefix + "events:dead" }

// MigrateLegacyKeys moves a single Redis's event log from the keys before
// hash tags to today's: each partition stream is renamed (RENAMENX keeps its
// entries and consumer groups) unless the new key exists, and each legacy
// dead letter moves, with its id, to its partition's dead-letter stream. It
// returns how many keys and dead letters it moved. On a Redis Cluster it
// does nothing (a cluster never held the legacy keys: they span slots).
func (l *Log) MigrateLegacyKeys(ctx context.Context) (int, error) {
	if _, ok := l.rdb.(*redis.ClusterClient); ok {
		return 0, nil
	}
	moved := 0
	for p := 0; p < l.cfg.Partitions; p++ {
		ok, err := l.rdb.RenameNX(ctx, l.legacyStreamKey(p), l.StreamKey(p)).Result()
		if err != nil && !strings.Contains(err.Error(), "no such key") {
			return moved, fmt.Errorf("eventlog: RENAMENX %s %s: %w", l.legacyStreamKey(p), l.StreamKey(p), err)
		}
		if ok {
			moved++
			l.log.Info("moved an event log partition to its hash-tagged key", "from", l.legacyStreamKey(p), "to", l.StreamKey(p))
		}
	}
	legacy := l.legacyDeadLetterKey()
	msgs, err := l.rdb.XRange(ctx, legacy, "-", "+").Result()
	if err != nil {
		return moved, fmt.Errorf("eventlog: XRANGE %s: %w", legacy, err)
	}
	for _, m := range msgs {
		p := l.partitionOfStream(str(m.Values["stream"]))
		err := l.rdb.XAdd(ctx, &redis.XAddArgs{Stream: l.DeadLetterKey(p), ID: m.ID, Values: m.Values}).Err()
		if err != nil && !strings.Contains(err.Error(), "equal or smaller") {
			return moved, fmt.Errorf("eventlog: move dead letter %s from %s to %s: %w", m.ID, legacy, l.DeadLetterKey(p), err)
		}
		if err := l.rdb.XDel(ctx, legacy, m.ID).Err(); err != nil {
			return moved, fmt.Errorf("eventlog: XDEL %s %s: %w", legacy, m.ID, err)
		}
		moved++
	}
	if len(msgs) > 0 {
		// Nothing writes the legacy stream any more; an empty stream
		// would stay as a key.
		if err := l.rdb.Del(ctx, legacy).Err(); err != nil {
			return moved, fmt.Errorf("eventlog: DEL %s: %w", legacy, err)
		}
	}
	return moved, nil
}

// appendChunk sends the XADDs of one chunk in one pipeline. With
// WaitReplicas, a WAIT follows them on the same connection of each primary
// (rediswait: on a Redis Cluster one pipeline per master, a stream's
// appends kept in order).
func (l *Log) appendChunk(ctx context.Context, adds []*redis.XAddArgs) ([]*redis.StringCmd, error) {
	cmds := make([]*redis.StringCmd, len(adds))
	if l.cfg.WaitReplicas == 0 {
		pipe := l.rdb.Pipeline()
		for i, a := range adds {
			cmds[i] = pipe.XAdd(ctx, a)
		}
		_, err := pipe.Exec(ctx)
		return cmds, err
	}
	streams := make([]string, len(adds))
	for i, a := range adds {
		streams[i] = a.Stream
	}
	err := rediswait.Pipelines(ctx, l.rdb, l.cfg.WaitReplicas, l.cfg.WaitTimeout, streams, func(pipe redis.Pipeliner, i int) {
		cmds[i] = pipe.XAdd(ctx, adds[i])
	})
	return cmds, err
}

// NotReplicatedError: appends reached their primary but not WaitReplicas
// replicas within WaitTimeout (or the cluster's slot map was moving). The
// events were not acknowledged: the caller answers 503 with Retry-After
// (api.BackendUnavailable) and the client retries; an event appended twice
// is harmless (external versions).
type NotReplicatedError = rediswait.NotReplicatedError

// partitionOfStream reads the partition from a stream key of either form
// ("baedal:events:3" or "{baedal:events:3}"); 0 when it names none.
func (l *Log) partitionOfStream(stream string) int {
	stream = strings.TrimSuffix(stream, "}")
	p, err := strconv.Atoi(stream[strings.LastIndexByte(stream, ':')+1:])
	if err != nil || p < 0 || p >= l.cfg.Partitions {
		return 0
	}
	return p
}

// Append adds events to their partitions in the given order and returns the
// stream id of each, in the same order. It returns only after Redis
// acknowledged every append (and, with WaitReplicas, after that many
// replicas have them); on error some events of the failed chunk may have
// been appended (a retry then duplicates them, which external versions make
// harmless). The caller validates the events first.
func (l *Log) Append(ctx context.Context, events []catalog.Event) ([]string, error) {
	ids := make([]string, 0, len(events))
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for start := 0; start < len(events); start += l.cfg.AppendChunk {
		chunk := events[start:min(start+l.cfg.AppendChunk, len(events))]
		adds := make([]*redis.XAddArgs, len(chunk))
		for i, ev := range chunk {
			raw, err := ev.MarshalJSON()
			if err != nil {
				return ids, fmt.Errorf("eventlog: encode event %d (shop %d version %d): %w", start+i, ev.AggregateID(), ev.Version, err)
			}
			adds[i] = &redis.XAddArgs{
				Stream: l.StreamKey(l.Partition(ev.AggregateID())), MaxLen: l.cfg.MaxLen, Approx: true,
				Values: []any{fieldEvent, raw, fieldAppended, now},
			}
		}
		cmds, err := l.appendChunk(ctx, adds)
		if err != nil {
			return ids, fmt.Errorf("eventlog: append events %d..%d of %d: %w", start, start+len(chunk)-1, len(events), err)
		}
		for _, c := range cmds {
			ids = append(ids, c.Val())
		}
		l.appended.Add(float64(len(chunk)))
	}
	return ids, nil
}

// Length returns the number of entries in partition p.
func (l *Log) Length(ctx context.Context, p int) (int64, error) {
	n, err := l.rdb.XLen(ctx, l.StreamKey(p)).Result()
	if err != nil {
		return 0, fmt.Errorf("eventlog: XLEN %s: %w", l.StreamKey(p), err)
	}
	return n, nil
}

// DeadLetter is an entry that cannot be applied, and why.
type DeadLetter struct {
	Entry  Entry
	Reason string
}

// DeadLetters reads up to count entries of the dead-letter stream, oldest
// first (operators and tests inspect it).
func (l *Log) DeadLetters(ctx context.Context, count int64) ([]DeadLetterRecord, error) {
	return l.DeadLettersAfter(ctx, "", count)
}

// DeadLettersAfter reads up to count entries of the dead-letter stream whose
// id is after the given one ("" = from the start), oldest first.
func (l *Log) DeadLettersAfter(ctx context.Context, after string, count int64) ([]DeadLetterRecord, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	// Each partition has its own dead-letter stream: read up to count of
	// each (pipelined; one round trip per node in a cluster), merge by id.
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.XMessageSliceCmd, l.cfg.Partitions)
	for p := range cmds {
		cmds[p] = pipe.XRangeN(ctx, l.DeadLetterKey(p), start, "+", count)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("eventlog: XRANGE the %d dead-letter streams from %s: %w", l.cfg.Partitions, start, err)
	}
	var out []DeadLetterRecord
	for _, c := range cmds {
		for _, m := range c.Val() {
			out = append(out, deadLetterRecord(m))
		}
	}
	slices.SortFunc(out, func(a, b DeadLetterRecord) int { return compareStreamIDs(a.ID, b.ID) })
	if int64(len(out)) > count {
		out = out[:count]
	}
	return out, nil
}

// compareStreamIDs orders stream ids ("<ms>-<seq>") by time, then sequence.
func compareStreamIDs(a, b string) int {
	parse := func(id string) (uint64, uint64) {
		ms, seq, _ := strings.Cut(id, "-")
		m, _ := strconv.ParseUint(ms, 10, 64)
		q, _ := strconv.ParseUint(seq, 10, 64)
		return m, q
	}
	am, aq := parse(a)
	bm, bq := parse(b)
	if c := cmp.Compare(am, bm); c != 0 {
		return c
	}
	return cmp.Compare(aq, bq)
}

// DeadLetterCount returns the number of entries in the dead-letter stream.
func (l *Log) DeadLetterCount(ctx context.Context) (int64, error) {
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, l.cfg.Partitions)
	for p := range cmds {
		cmds[p] = pipe.XLen(ctx, l.DeadLetterKey(p))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("eventlog: XLEN the %d dead-letter streams: %w", l.cfg.Partitions, err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

func deadLetterRecord(m redis.XMessage) DeadLetterRecord {
	rec := DeadLetterRecord{
		ID: m.ID, Raw: str(m.Values[fieldEvent]), Stream: str(m.Values["stream"]), EntryID: str(m.Values["entry_id"]),
		Group: str(m.Values["group"]), Reason: str(m.Values["reason"]),
	}
	rec.Attempts, _ = strconv.ParseInt(str(m.Values["attempts"]), 10, 64)
	return rec
}

// DeadLetterRecord is one entry of the dead-letter stream.
type DeadLetterRecord struct {
	ID       string // id in the dead-letter stream
	Raw      string // the event's JSON as it was appended
	Stream   string // source partition stream
	EntryID  string // id in the source stream
	Group    string // consumer group that gave up
	Reason   string
	Attempts int64 // deliveries to that group
}

// ErrDeadLetterNotFound: no dead letter has the given id (never, or already
// replayed or dropped).
var ErrDeadLetterNotFound = errors.New("eventlog: no such dead letter")

// ErrNotReplayable: a dead letter's event is not a valid event, so replaying
// it would only dead-letter it again; drop it instead.
var ErrNotReplayable = errors.New("eventlog: dead letter holds no valid event")

// deadLetter reads one dead letter by id, and the partition whose
// dead-letter stream holds it.
func (l *Log) deadLetter(ctx context.Context, id string) (DeadLetterRecord, int, error) {
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.XMessageSliceCmd, l.cfg.Partitions)
	for p := range cmds {
		cmds[p] = pipe.XRangeN(ctx, l.DeadLetterKey(p), id, id, 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return DeadLetterRecord{}, 0, fmt.Errorf("eventlog: XRANGE the %d dead-letter streams at %s: %w", l.cfg.Partitions, id, err)
	}
	for p, c := range cmds {
		if msgs := c.Val(); len(msgs) > 0 {
			return deadLetterRecord(msgs[0]), p, nil
		}
	}
	return DeadLetterRecord{}, 0, fmt.Errorf("%w: %s", ErrDeadLetterNotFound, id)
}

// ReplayDeadLetter appends a dead letter's event again to its shop's
// partition and removes it from the dead-letter stream, in one MULTI/EXEC,
// and returns the new entry's id. Every consumer group reads the new entry,
// not only the one that gave up; events carry external versions, so a group
// that had applied it skips it as stale. Replay after fixing the cause (for
// instance after creating the shop a menu event needed).
func (l *Log) ReplayDeadLetter(ctx context.Context, id string) (string, error) {
	rec, deadPartition, err := l.deadLetter(ctx, id)
	if err != nil {
		return "", err
	}
	events, err := catalog.ParseEvents([]byte(rec.Raw))
	if err != nil || len(events) != 1 {
		return "", fmt.Errorf("%w: dead letter %s: %v", ErrNotReplayable, id, err)
	}
	p := l.Partition(events[0].AggregateID())
	stream := l.StreamKey(p)
	var add *redis.StringCmd
	var del *redis.IntCmd
	queue := func(pipe redis.Pipeliner) error {
		add = pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: stream, MaxLen: l.cfg.MaxLen, Approx: true,
			Values: []any{fieldEvent, rec.Raw, fieldAppended, strconv.FormatInt(time.Now().UnixMilli(), 10)},
		})
		del = pipe.XDel(ctx, l.DeadLetterKey(deadPartition), id)
		return nil
	}
	if p == deadPartition {
		_, err = l.rdb.TxPipelined(ctx, queue)
	} else {
		// Dead-lettered under another partition count: the two streams
		// may be in two slots. Append first, then delete: a failure in
		// between leaves a duplicate (harmless), never a loss.
		_, err = l.rdb.Pipelined(ctx, queue)
	}
	if err != nil {
		return "", fmt.Errorf("eventlog: replay dead letter %s into %s: %w", id, stream, err)
	}
	if del.Val() == 0 {
		// Replayed or dropped concurrently: the append is a duplicate, which
		// external versions make harmless.
		l.log.Warn("dead letter replayed twice", "id", id)
	}
	l.appended.Inc()
	return add.Val(), nil
}

// DropDeadLetter deletes a dead letter for good.
func (l *Log) DropDeadLetter(ctx context.Context, id string) error {
	_, p, err := l.deadLetter(ctx, id)
	if err != nil {
		return err
	}
	n, err := l.rdb.XDel(ctx, l.DeadLetterKey(p), id).Result()
	if err != nil {
		return fmt.Errorf("eventlog: XDEL %s %s: %w", l.DeadLetterKey(p), id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", ErrDeadLetterNotFound, id)
	}
	return nil
}

// Reason kinds: the bounded label of the dead-letter metric and of each
// dead letter in the admin API.
const (
	ReasonInvalidEvent      = "invalid_event"
	ReasonShopNotFound      = "shop_not_found"
	ReasonIncompleteShop    = "incomplete_shop"
	ReasonIncompleteMenu    = "incomplete_menu"
	ReasonMaxAttempts       = "max_attempts"
	ReasonOpenSearchRefused = "opensearch_refused"
	ReasonOther             = "other"
)

// ReasonKind sorts a dead letter's reason text into a kind. The texts are
// the indexer's: they wrap the catalog's sentinel errors, whose messages are
// matched here, or start with the indexer's fixed phrases.
func ReasonKind(reason string) string {
	switch {
	case strings.Contains(reason, catalog.ErrShopNotFound.Error()):
		return ReasonShopNotFound
	case strings.Contains(reason, catalog.ErrIncompleteShop.Error()):
		return ReasonIncompleteShop
	case strings.Contains(reason, catalog.ErrIncompleteMenu.Error()):
		return ReasonIncompleteMenu
	case strings.HasPrefix(reason, "invalid event"):
		return ReasonInvalidEvent
	case strings.HasPrefix(reason, "delivered ") && strings.Contains(reason, "max-attempts"):
		return ReasonMaxAttempts
	case strings.HasPrefix(reason, "OpenSearch refused"):
		return ReasonOpenSearchRefused
	}
	return ReasonOther
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
