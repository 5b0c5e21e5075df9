package linkbench

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/linkstore"
)

// newHistogram records ns from 1 ns to 10 s at 3 significant digits.
func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(10*time.Second), 3) }

// openStore opens a store on rdb in the given layout with the run's
// settings. With dict set, it publishes the run's dictionary in that Redis
// so the store decodes the run's values (Resolve); the store's own codec
// is proto, so opening it trains no bootstrap dictionary.
func openStore(ctx context.Context, cfg Config, rdb redis.UniversalClient, layout string, dict *linkstore.Dictionary) (*linkstore.Store, error) {
	sc := linkstore.StoreConfig{Codec: linkstore.CodecProto, KeyFormat: cfg.KeyFormat, TTL: cfg.TTL, Layout: layout,
		Buckets: linkstore.BucketConfig{Shards: cfg.BucketShards}}
	st, err := linkstore.NewStore(ctx, sc, rdb, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("linkbench: open a %s store: %w", layout, err)
	}
	if dict != nil {
		if err := st.PublishDictionary(ctx, dict); err != nil {
			return nil, fmt.Errorf("linkbench: publish the run's dictionary: %w", err)
		}
	}
	return st, nil
}

// serverVersion names the server: "valkey 8.1.8" or "redis 7.0.15".
func serverVersion(ctx context.Context, rdb *redis.Client) (string, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("linkbench: INFO server: %w", err)
	}
	fields := map[string]string{}
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	if v := fields["valkey_version"]; v != "" {
		return "valkey " + v, nil
	}
	return "redis " + fields["redis_version"], nil
}

// simulateClick gives a generated record the UUIDv7 of a click at t (and
// its deep link that id), expiring ttl after t, as a click created at t
// by the API would be.
func simulateClick(rec *linkstore.Record, t time.Time, ttl time.Duration) {
	old := rec.ClickID.String()
	rec.ClickID = linkstore.NewClickIDAt(t)
	rec.DeepLinkURL = strings.Replace(rec.DeepLinkURL, old, rec.ClickID.String(), 1)
	rec.ExpiresAt = t.Add(ttl).UTC().Truncate(time.Millisecond)
}

// createBatch collects encoded records for Store.CreateValues.
type createBatch struct {
	ids       []linkstore.ClickID
	values    [][]byte
	expiresAt []time.Time
}

func (b *createBatch) add(rec *linkstore.Record, value []byte) {
	b.ids = append(b.ids, rec.ClickID)
	b.values = append(b.values, value)
	b.expiresAt = append(b.expiresAt, rec.ExpiresAt)
}

// create stores the batch; an id stored already is an error (every id of
// a run is new).
func (b *createBatch) create(ctx context.Context, st *linkstore.Store, where string) error {
	if len(b.ids) == 0 {
		return nil
	}
	existed, err := st.CreateValues(ctx, b.ids, b.values, b.expiresAt)
	if err != nil {
		return fmt.Errorf("linkbench: load %d records into %s: %w", len(b.ids), where, err)
	}
	if existed > 0 {
		return fmt.Errorf("linkbench: %d of %d new click ids were stored already in %s", existed, len(b.ids), where)
	}
	return nil
}

// timeResolvesPaired runs, after every format of a round has loaded and
// outside the used_memory readings, the round's one-at-a-time resolves:
// ResolveSample of the round's records, each resolved in every layout
// that has a store (the keys layout and the bucketed one), request by
// request, the layouts' order alternating from one record to the next
// (ABBA). A stall of the machine (another process's burst on a busy
// 2-core host, a GC) then delays both layouts' resolves around it alike,
// instead of landing in one layout's block of 2,000 resolves and not in
// the other's: with blocks, the p99 ratio of one run swung from 0.07 to
// 18 on the same binary and server (BENCHMARKS.md, S4). Each layout's
// latencies are also kept per round for the interval over rounds
// (bench.QuantileRatioOverRounds).
func timeResolvesPaired(ctx context.Context, chunk []linkstore.Record, cfg Config, round int, formats []*format) error {
	var sides []*format
	for _, f := range formats {
		if f.store != nil {
			f.resolveRounds = append(f.resolveRounds, bench.NewLatencyRecorder())
			sides = append(sides, f)
		}
	}
	if len(sides) == 0 || len(chunk) == 0 {
		return nil
	}
	step := max(1, len(chunk)/max(cfg.ResolveSample, 1))
	for j := 0; j < cfg.ResolveSample && j*step < len(chunk); j++ {
		id := chunk[j*step].ClickID
		for _, i := range bench.RoundOrder(round+j, len(sides)) {
			f := sides[i]
			took, err := timeResolve(ctx, f.store, id, f.resolve)
			if err != nil {
				return fmt.Errorf("linkbench: %s: %w", f.name, err)
			}
			f.resolveRounds[len(f.resolveRounds)-1].Record(took)
		}
	}
	return nil
}

// timeClientIDs runs, after timeResolvesPaired, ClientIDSample creates and
// resolves one at a time in the bucketed layout of clicks with client
// UUIDv4 ids, each paired with one of a UUIDv7 id, the pair's order
// alternating.
func (f *format) timeClientIDs(ctx context.Context, chunk []linkstore.Record, cfg Config, round int) error {
	if !f.bucketed || len(chunk) == 0 {
		return nil
	}
	for j := range min(cfg.ClientIDSample, len(chunk)) {
		for _, client := range [][]bool{{true, false}, {false, true}}[(round+j)%2] {
			rec := chunk[j]
			create, resolve := f.v7Create, f.v7Resolve
			rec.ClickID = linkstore.NewClickID()
			if client {
				rec.ClickID, create, resolve = randomUUIDv4(), f.clientCreate, f.clientResolve
			}
			rec.ExpiresAt = time.Now().Add(cfg.TTL).UTC().Truncate(time.Millisecond)
			start := time.Now()
			if err := f.store.Create(ctx, &rec); err != nil {
				return fmt.Errorf("linkbench: %s: create click %s: %w", f.name, rec.ClickID, err)
			}
			_ = create.RecordValue(int64(time.Since(start)))
			if _, err := timeResolve(ctx, f.store, rec.ClickID, resolve); err != nil {
				return fmt.Errorf("linkbench: %s: %w", f.name, err)
			}
		}
	}
	return nil
}

// timeResolve resolves a click that was not resolved before and records
// the time.
func timeResolve(ctx context.Context, st *linkstore.Store, id linkstore.ClickID, h *hdrhistogram.Histogram) (time.Duration, error) {
	start := time.Now()
	res, err := st.Resolve(ctx, id)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("resolve click %s: %w", id, err)
	}
	if res.AlreadyConsumed {
		return 0, fmt.Errorf("resolve click %s: consumed before its first resolve", id)
	}
	_ = h.RecordValue(int64(took))
	return took, nil
}

// randomUUIDv4 is a client's random click id.
func randomUUIDv4() linkstore.ClickID {
	var id linkstore.ClickID
	_, _ = rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

// summarizeBucketed fills sum.Bucketed and its targets from the bucketed
// format bf and the keys format kf of the same codec.
func summarizeBucketed(ctx context.Context, cfg Config, sum *Summary, bf, kf *format) error {
	keys, b := sum.Codecs[kf.name], sum.Codecs[bf.name]
	n, encodings, err := bf.store.BucketKeys(ctx, 1000)
	if err != nil {
		return err
	}
	// Every record in the buckets: the load's and the one-by-one creates'.
	records := float64(bf.records) + float64(bf.clientCreate.TotalCount()+bf.v7Create.TotalCount())
	fig := &BucketedFigures{
		Codec: cfg.BucketedCodec, BucketWidth: linkstore.DefaultBucketWidth.String(), BucketShards: cfg.BucketShards, ClickRate: cfg.ClickRate,
		FieldExpiry: bf.store.FieldExpiry(), Buckets: n, Encodings: encodings,
		UsedMemoryPerRecord: b.UsedMemoryPerRecord, KeysUsedMemoryPerRecord: keys.UsedMemoryPerRecord,
		MemoryRatio: b.MemoryRatio, MemoryRatioCI95: b.MemoryRatioCI95, MemoryRatioRounds: b.MemoryRatioRounds,
		EncodeRatio: b.EncodeRatio, EncodeRatioCI95: b.EncodeRatioCI95, DecodeRatio: b.DecodeRatio, DecodeRatioCI95: b.DecodeRatioCI95,
		ProbeBuckets: int(cfg.TTL/linkstore.DefaultBucketWidth) + 3,
	}
	if n > 0 {
		fig.RecordsPerBucket = round2(records / float64(n))
	}
	fig.MemoryRatioToKeys = bench.Ratio(float64(bf.usedMemory), float64(kf.usedMemory))
	fig.MemoryRatioToKeysCI95 = bench.PairedRatioCI(kf.roundUsedMemory, bf.roundUsedMemory).IntervalAround(fig.MemoryRatioToKeys)
	q := func(h *hdrhistogram.Histogram, p float64) float64 { return float64(h.ValueAtQuantile(p)) }
	fig.ResolveP50Ns, fig.ResolveP99Ns = q(bf.resolve, 50), q(bf.resolve, 99)
	fig.KeysResolveP50Ns, fig.KeysResolveP99Ns = q(kf.resolve, 50), q(kf.resolve, 99)
	p50 := bench.QuantileRatioOverRounds(kf.resolveRounds, bf.resolveRounds, 0.5, cfg.Seed)
	p99 := bench.QuantileRatioOverRounds(kf.resolveRounds, bf.resolveRounds, 0.99, cfg.Seed)
	fig.ResolveP50Ratio, fig.ResolveP50RatioCI95, fig.ResolveP50RatioRounds = p50.Point, p50.CI95, p50.Rounds
	fig.ResolveP99Ratio, fig.ResolveP99RatioCI95, fig.ResolveP99RatioRounds = p99.Point, p99.CI95, p99.Rounds
	if bf.clientCreate.TotalCount() > 0 {
		fig.ClientIDCreateP50Ns, fig.ClientIDCreateP99Ns = q(bf.clientCreate, 50), q(bf.clientCreate, 99)
		fig.V7CreateP50Ns, fig.V7CreateP99Ns = q(bf.v7Create, 50), q(bf.v7Create, 99)
		fig.ClientIDCreateP50Ratio = bench.Ratio(fig.ClientIDCreateP50Ns, fig.V7CreateP50Ns)
		fig.ClientIDCreateP50RatioCI95 = bench.HistogramQuantileRatioCI(bf.v7Create, bf.clientCreate, 0.5, cfg.Seed)
		fig.ClientIDResolveP50Ns, fig.ClientIDResolveP99Ns = q(bf.clientResolve, 50), q(bf.clientResolve, 99)
		fig.ClientIDResolveP50Ratio = bench.Ratio(fig.ClientIDResolveP50Ns, q(bf.v7Resolve, 50))
		fig.ClientIDResolveP50RatioCI95 = bench.HistogramQuantileRatioCI(bf.v7Resolve, bf.clientResolve, 0.5, cfg.Seed)
	}
	sum.Bucketed = fig
	sum.Targets["bucketed.memory_ratio"] = bench.AtMost(TargetBucketedMemoryRatio).Evaluate(fig.MemoryRatio, fig.MemoryRatioCI95)
	sum.Targets["bucketed.encode_ratio"] = bench.AtMost(TargetBucketedEncodeRatio).Evaluate(fig.EncodeRatio, fig.EncodeRatioCI95)
	sum.Targets["bucketed.decode_ratio"] = bench.AtMost(TargetBucketedDecodeRatio).Evaluate(fig.DecodeRatio, fig.DecodeRatioCI95)
	sum.Targets["bucketed.resolve_p99_ratio"] = bench.AtMost(TargetBucketedResolveP99Ratio).Evaluate(fig.ResolveP99Ratio, fig.ResolveP99RatioCI95)
	return nil
}

// bucketedSection is the report's section on the bucketed layout.
func bucketedSection(b *BucketedFigures) bench.Section {
	t := &bench.Table{Header: []string{"figure", "bucketed", "keys layout", "ratio", "95% interval"}}
	t.Rows = [][]string{
		{"used_memory B/record", ff(b.UsedMemoryPerRecord), ff(b.KeysUsedMemoryPerRecord), ff(b.MemoryRatioToKeys), fmtInterval(b.MemoryRatioToKeysCI95)},
		{"resolve p50 ns", ff(b.ResolveP50Ns), ff(b.KeysResolveP50Ns), ff(b.ResolveP50Ratio), fmtInterval(b.ResolveP50RatioCI95)},
		{"resolve p99 ns", ff(b.ResolveP99Ns), ff(b.KeysResolveP99Ns), ff(b.ResolveP99Ratio), fmtInterval(b.ResolveP99RatioCI95)},
	}
	return bench.Section{Title: "Bucketed layout", Text: fmt.Sprintf(
		"Records as fields of hashes of %s buckets in %d shards, %s, loaded at a simulated %d clicks/s (UUIDv7 times): %d buckets, %.1f records each, encodings of a sample %v, per-field expiry %v. "+
			"used_memory over JSON %.3f %s (target <= %.2f); over the keys layout of the same codec %.3f. Encode and decode over JSON: %.3f and %.3f (targets <= %.2f and <= %.2f). "+
			"Resolve one at a time, bucketed over keys: p50 %.3f, p99 %.3f (target <= %.1f). "+
			"Client UUIDv4 ids (a create checks and a read probes %d buckets): create p50 %.0f ns vs %.0f ns for UUIDv7 (%.3f×), resolve p50 %.0f ns (%.3f× UUIDv7's), p99 %.0f ns.",
		b.BucketWidth, b.BucketShards, b.Codec, b.ClickRate, b.Buckets, b.RecordsPerBucket, b.Encodings, b.FieldExpiry,
		b.MemoryRatio, fmtInterval(b.MemoryRatioCI95), TargetBucketedMemoryRatio, b.MemoryRatioToKeys, b.EncodeRatio, b.DecodeRatio, TargetBucketedEncodeRatio, TargetBucketedDecodeRatio,
		b.ResolveP50Ratio, b.ResolveP99Ratio, TargetBucketedResolveP99Ratio,
		b.ProbeBuckets, b.ClientIDCreateP50Ns, b.V7CreateP50Ns, b.ClientIDCreateP50Ratio, b.ClientIDResolveP50Ns, b.ClientIDResolveP50Ratio, b.ClientIDResolveP99Ns),
		Table: t}
}
