package eventlog

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/promreg"
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
}

// Defaults returns 4 partitions, a 5,000,000-entry cap per partition and
// pipelines of 1,000 appends.
func Defaults() Config {
	return Config{Prefix: "baedal:", Partitions: 4, MaxLen: 5_000_000, AppendChunk: 1000}
}

// Flags binds the configuration to command-line flags.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Prefix, "eventlog-prefix", c.Prefix, "prefix of the event log's Redis keys")
	fs.IntVar(&c.Partitions, "eventlog-partitions", c.Partitions, "number of event streams (shop id mod N); change only on an empty log")
	fs.Int64Var(&c.MaxLen, "eventlog-max-len", c.MaxLen, "approximate length cap of each event stream")
	fs.IntVar(&c.AppendChunk, "eventlog-append-chunk", c.AppendChunk, "appends per Redis pipeline")
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

// StreamKey returns the key of partition p.
func (l *Log) StreamKey(p int) string { return l.cfg.Prefix + "events:" + strconv.Itoa(p) }

// DeadLetterKey returns the key of the dead-letter stream.
func (l *Log) DeadLetterKey() string { return l.cfg.Prefix + "events:dead" }

// Append adds events to their partitions in the given order and returns the
// stream id of each, in the same order. It returns only after Redis
// acknowledged every append; on error some events of the failed chunk may
// have been appended (a retry then duplicates them, which external versions
// make harmless). The caller validates the events first.
func (l *Log) Append(ctx context.Context, events []catalog.Event) ([]string, error) {
	ids := make([]string, 0, len(events))
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for start := 0; start < len(events); start += l.cfg.AppendChunk {
		chunk := events[start:min(start+l.cfg.AppendChunk, len(events))]
		pipe := l.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(chunk))
		for i, ev := range chunk {
			raw, err := ev.MarshalJSON()
			if err != nil {
				return ids, fmt.Errorf("eventlog: encode event %d (shop %d version %d): %w", start+i, ev.AggregateID(), ev.Version, err)
			}
			cmds[i] = pipe.XAdd(ctx, &redis.XAddArgs{
				Stream: l.StreamKey(l.Partition(ev.AggregateID())), MaxLen: l.cfg.MaxLen, Approx: true,
				Values: []any{fieldEvent, raw, fieldAppended, now},
			})
		}
		if _, err := pipe.Exec(ctx); err != nil {
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
	msgs, err := l.rdb.XRangeN(ctx, l.DeadLetterKey(), start, "+", count).Result()
	if err != nil {
		return nil, fmt.Errorf("eventlog: XRANGE %s from %s: %w", l.DeadLetterKey(), start, err)
	}
	out := make([]DeadLetterRecord, len(msgs))
	for i, m := range msgs {
		out[i] = deadLetterRecord(m)
	}
	return out, nil
}

// DeadLetterCount returns the number of entries in the dead-letter stream.
func (l *Log) DeadLetterCount(ctx context.Context) (int64, error) {
	n, err := l.rdb.XLen(ctx, l.DeadLetterKey()).Result()
	if err != nil {
		return 0, fmt.Errorf("eventlog: XLEN %s: %w", l.DeadLetterKey(), err)
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

// deadLetter reads one dead letter by id.
func (l *Log) deadLetter(ctx context.Context, id string) (DeadLetterRecord, error) {
	msgs, err := l.rdb.XRangeN(ctx, l.DeadLetterKey(), id, id, 1).Result()
	if err != nil {
		return DeadLetterRecord{}, fmt.Errorf("eventlog: XRANGE %s %s: %w", l.DeadLetterKey(), id, err)
	}
	if len(msgs) == 0 {
		return DeadLetterRecord{}, fmt.Errorf("%w: %s", ErrDeadLetterNotFound, id)
	}
	return deadLetterRecord(msgs[0]), nil
}

// ReplayDeadLetter appends a dead letter's event again to its shop's
// partition and removes it from the dead-letter stream, in one MULTI/EXEC,
// and returns the new entry's id. Every consumer group reads the new entry,
// not only the one that gave up; events carry external versions, so a group
// that had applied it skips it as stale. Replay after fixing the cause (for
// instance after creating the shop a menu event needed).
func (l *Log) ReplayDeadLetter(ctx context.Context, id string) (string, error) {
	rec, err := l.deadLetter(ctx, id)
	if err != nil {
		return "", err
	}
	events, err := catalog.ParseEvents([]byte(rec.Raw))
	if err != nil || len(events) != 1 {
		return "", fmt.Errorf("%w: dead letter %s: %v", ErrNotReplayable, id, err)
	}
	stream := l.StreamKey(l.Partition(events[0].AggregateID()))
	var add *redis.StringCmd
	var del *redis.IntCmd
	_, err = l.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		add = pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: stream, MaxLen: l.cfg.MaxLen, Approx: true,
			Values: []any{fieldEvent, rec.Raw, fieldAppended, strconv.FormatInt(time.Now().UnixMilli(), 10)},
		})
		del = pipe.XDel(ctx, l.DeadLetterKey(), id)
		return nil
	})
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
	n, err := l.rdb.XDel(ctx, l.DeadLetterKey(), id).Result()
	if err != nil {
		return fmt.Errorf("eventlog: XDEL %s %s: %w", l.DeadLetterKey(), id, err)
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
