// Package linkbench is the `baedal bench links` workload (SPEC §S4): it
// loads the same N generated click records into Redis once per value
// format, measures the memory Redis itself reports for each (INFO memory
// used_memory delta per record, and MEMORY USAGE on a sample of keys),
// value and key bytes, and per-record encode/decode time of every codec,
// and compares each format with the baseline as stored today (text UUID
// keys, raw JSON values, 1-hour TTL).
//
// Main invariant: every format sees the same records in the same rounds,
// interleaved (bench.Interleave, ABBA order), and only one format writes to
// Redis between two used_memory readings, each into its own database, so
// each delta belongs to one format. used_memory is instance-wide: the
// benchmark starts its own redis-server on a free loopback port (no
// persistence) and stops it by PID, unless given an idle one.
//
// With --redis-cluster MASTERS the benchmark also starts a local Redis
// Cluster of that many masters (benchmarks/internal/clusterbench, no replicas) and, in
// every round right after the formats, loads the same chunk into it with
// the link store's default codec (linkstore.DefaultCodec) and its compact
// keys, pipelined through the cluster client (which splits a pipeline by
// slot). The summary's redis_cluster object holds that codec's used_memory
// per record on the cluster (the sum over the masters of used_memory above
// each one's empty baseline) beside the single Redis's, and the masters'
// balance: the largest master's share of the commands and of the memory
// over the smallest's, with the target <= 1.2.
//
// Unless --bucketed-codec none, the same codec is also measured in the
// link store's bucketed layout (linkstore.LayoutBucketed, its own
// database, loaded through Store.CreateValues), beside the keys layout:
// records get UUIDv7 ids of a simulated --click-rate, and after each
// round's loads, outside their used_memory readings, a sample is resolved
// one at a time in both layouts, alternating request by request, and
// clicks with client UUIDv4 ids are created and resolved beside UUIDv7
// ones (bucketed.go). The cluster then loads the
// bucketed layout. The summary's bucketed object and the bucketed.*
// targets (issue 41) come from these.
package linkbench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchmarks/internal/clusterbench"
	"github.com/baedal/baedal/internal/redisproc"
	"github.com/baedal/baedal/linkstore"
)

// Targets of SPEC §S4 / issue S4 for the best codec.
const (
	TargetMemoryRatio = 0.35
	TargetEncodeNs    = 5000
	TargetDecodeNs    = 3000
)

// Targets of issue 41 for the bucketed layout: memory, encode and decode
// against JSON, and resolve p99 against today's layout (keys) with the
// same codec.
const (
	TargetBucketedMemoryRatio     = 0.25
	TargetBucketedEncodeRatio     = 1.0
	TargetBucketedDecodeRatio     = 0.25
	TargetBucketedResolveP99Ratio = 1.1
)

// NoBucketed as --bucketed-codec leaves the bucketed layout out.
const NoBucketed = "none"

// Config is the benchmark's configuration.
type Config struct {
	// Profile sizes the run: quick = 200,000 records, full = 1,000,000.
	Profile bench.Profile
	// Records overrides the profile's record count when > 0.
	Records int
	// RoundRecords is the records per interleaved round (default 10,000).
	RoundRecords int
	// Codecs to measure; the baseline json-raw is always measured first.
	Codecs []string
	// KeyFormat of the non-baseline formats (raw or ascii85).
	KeyFormat string
	// TTL set on every record.
	TTL time.Duration
	// RedisServer is the redis-server binary started for the run.
	RedisServer string
	// RedisAddr, when set, is an idle Redis to use instead (its databases
	// 0..len(Codecs) are flushed).
	RedisAddr string
	// MemorySample is the number of keys per format sent MEMORY USAGE.
	MemorySample int
	// Seed of the generated records; the dictionaries train on Seed+1.
	Seed uint64
	// ReportDir receives links.html and links.json.
	ReportDir string
	// Command is the command line written into the report.
	Command string
	// RedisCluster, when > 0, is the number of masters of a local Redis
	// Cluster the records are loaded into too (see the package doc).
	RedisCluster int
	// BucketedCodec is the codec of the bucketed layout's contender, which
	// is measured beside the same codec in the keys layout (NoBucketed:
	// leave it out).
	BucketedCodec string
	// ClickRate is the simulated clicks per second: record i gets a UUIDv7
	// of the run's start + i/ClickRate, so buckets fill as they would at
	// that rate (records per bucket = ClickRate × width / shards).
	ClickRate int
	// BucketShards is the bucketed layout's --links-bucket-shards.
	BucketShards int
	// ResolveSample is the records per round resolved one at a time through
	// the store, in the keys layout and in the bucketed layout.
	ResolveSample int
	// ClientIDSample is the clicks per round created and resolved one at a
	// time in the bucketed layout with client UUIDv4 ids, and as many with
	// UUIDv7 ids, to price the probes of ids without a time.
	ClientIDSample int
}

// Defaults returns the quick profile's configuration.
func Defaults() Config {
	return Config{
		Profile:      bench.ProfileQuick,
		RoundRecords: 10000,
		Codecs:       linkstore.CodecNames(),
		KeyFormat:    linkstore.KeyFormatNameRaw,
		TTL:          time.Hour,
		RedisServer:  "redis-server",
		MemorySample: 1000,
		Seed:         7,
		ReportDir:    "reports",

		BucketedCodec:  linkstore.DefaultCodec,
		ClickRate:      250,
		BucketShards:   linkstore.DefaultBucketShards,
		ResolveSample:  2000,
		ClientIDSample: 100,
	}
}

// Flags binds the configuration.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var(&c.Profile, "profile", "run size: quick (200,000 records) or full (1,000,000)")
	fs.IntVar(&c.Records, "records", c.Records, "records to load per format (overrides --profile)")
	fs.IntVar(&c.RoundRecords, "round-records", c.RoundRecords, "records per interleaved round")
	fs.Func("codecs", "comma-separated codecs (default all: "+strings.Join(linkstore.CodecNames(), ",")+")", func(s string) error {
		c.Codecs = strings.Split(s, ",")
		return nil
	})
	fs.StringVar(&c.KeyFormat, "key-format", c.KeyFormat, "key format of the compact formats: raw or ascii85")
	fs.DurationVar(&c.TTL, "ttl", c.TTL, "TTL of every record")
	fs.StringVar(&c.RedisServer, "redis-server", c.RedisServer, "redis-server binary to start for the run")
	fs.StringVar(&c.RedisAddr, "redis-addr", c.RedisAddr, "use this idle Redis instead of starting one (its databases are flushed)")
	fs.IntVar(&c.MemorySample, "memory-sample", c.MemorySample, "keys per format measured with MEMORY USAGE")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "generator seed")
	fs.StringVar(&c.ReportDir, "report-dir", c.ReportDir, "directory of the HTML report")
	fs.IntVar(&c.RedisCluster, "redis-cluster", c.RedisCluster, "also load the records into a local Redis Cluster of this many masters (3..16; 0: none) and report its balance")
	fs.StringVar(&c.BucketedCodec, "bucketed-codec", c.BucketedCodec, "codec of the bucketed layout, measured beside the same codec in the keys layout ("+NoBucketed+": leave the bucketed layout out)")
	fs.IntVar(&c.ClickRate, "click-rate", c.ClickRate, "simulated clicks per second: the UUIDv7 times of the records, which decide how full the buckets get")
	fs.IntVar(&c.BucketShards, "bucket-shards", c.BucketShards, "buckets per minute of the bucketed layout")
	fs.IntVar(&c.ResolveSample, "resolve-sample", c.ResolveSample, "records per round resolved one at a time in the keys and in the bucketed layout")
	fs.IntVar(&c.ClientIDSample, "client-id-sample", c.ClientIDSample, "clicks per round created and resolved in the bucketed layout with client UUIDv4 ids, and as many with UUIDv7 ids")
}

// bucketed reports whether the run measures the bucketed layout.
func (c Config) bucketed() bool { return c.BucketedCodec != NoBucketed }

// RecordCount is the number of records a run loads per format.
func (c Config) RecordCount() int {
	if c.Records > 0 {
		return c.Records
	}
	if c.Profile == bench.ProfileFull {
		return 1_000_000
	}
	return 200_000
}

// Validate names the first invalid setting with its allowed values.
func (c Config) Validate() error {
	if _, err := bench.ParseProfile(string(c.Profile)); err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	if c.Records < 0 || c.Records > 50_000_000 {
		return fmt.Errorf("--records: got %d, allowed: 0 (profile) or 1..50000000", c.Records)
	}
	if c.RoundRecords < 1 || c.RoundRecords > 1_000_000 {
		return fmt.Errorf("--round-records: got %d, allowed: 1..1000000", c.RoundRecords)
	}
	if len(c.Codecs) == 0 || len(c.Codecs) > 15 {
		return fmt.Errorf("--codecs: %d codecs, allowed: 1..15 of %s", len(c.Codecs), strings.Join(linkstore.CodecNames(), ", "))
	}
	for _, name := range c.Codecs {
		if !slices.Contains(linkstore.CodecNames(), name) {
			return fmt.Errorf("--codecs: %q is not one of %s", name, strings.Join(linkstore.CodecNames(), ", "))
		}
	}
	if c.KeyFormat != linkstore.KeyFormatNameRaw && c.KeyFormat != linkstore.KeyFormatNameASCII85 {
		return fmt.Errorf("--key-format: got %q, allowed: raw, ascii85", c.KeyFormat)
	}
	if c.TTL < time.Minute {
		return fmt.Errorf("--ttl: got %s, must be at least 1m so nothing expires during the run", c.TTL)
	}
	if c.MemorySample < 1 || c.MemorySample > 100_000 {
		return fmt.Errorf("--memory-sample: got %d, allowed: 1..100000", c.MemorySample)
	}
	if c.RedisCluster != 0 && (c.RedisCluster < 3 || c.RedisCluster > 16) {
		return fmt.Errorf("--redis-cluster: got %d masters, allowed: 0 (none) or 3..16", c.RedisCluster)
	}
	if c.RedisAddr == "" && c.RedisServer == "" {
		return errors.New("--redis-server: required unless --redis-addr is given")
	}
	if c.bucketed() {
		if c.BucketedCodec == linkstore.CodecJSONRaw || !slices.Contains(linkstore.CodecNames(), c.BucketedCodec) {
			return fmt.Errorf("--bucketed-codec: got %q, allowed: %s or any codec but %s: %s", c.BucketedCodec, NoBucketed, linkstore.CodecJSONRaw, strings.Join(linkstore.CodecNames()[1:], ", "))
		}
		if !slices.Contains(c.Codecs, c.BucketedCodec) {
			return fmt.Errorf("--bucketed-codec: %s is not in --codecs, so the keys layout it is compared with would not be measured", c.BucketedCodec)
		}
	}
	switch {
	case c.ClickRate < 1 || c.ClickRate > 1_000_000:
		return fmt.Errorf("--click-rate: got %d, allowed: 1..1000000", c.ClickRate)
	case c.BucketShards < 1 || c.BucketShards > linkstore.MaxBucketShards:
		return fmt.Errorf("--bucket-shards: got %d, allowed: 1..%d", c.BucketShards, linkstore.MaxBucketShards)
	case c.ResolveSample < 0 || c.ResolveSample > 100_000:
		return fmt.Errorf("--resolve-sample: got %d, allowed: 0..100000 (at most a round's records are resolved)", c.ResolveSample)
	case c.ClientIDSample < 0 || c.ClientIDSample > 10_000:
		return fmt.Errorf("--client-id-sample: got %d, allowed: 0..10000", c.ClientIDSample)
	}
	return nil
}

// CodecFigures is what the run measured for one format.
type CodecFigures struct {
	Codec     string `json:"codec"`
	KeyFormat string `json:"key_format"`
	// Layout is keys (one string per record) or bucketed.
	Layout  string `json:"layout"`
	Records int    `json:"records"`
	// UsedMemoryPerRecord is the used_memory delta of loading the records,
	// divided by their number: key, value, TTL and Redis's own overhead.
	UsedMemoryPerRecord  float64 `json:"used_memory_per_record"`
	MemoryUsagePerRecord float64 `json:"memory_usage_per_record"` // mean MEMORY USAGE of the sample
	ValueBytesPerRecord  float64 `json:"value_bytes_per_record"`
	KeyBytesPerRecord    float64 `json:"key_bytes_per_record"`
	MemoryRatio          float64 `json:"memory_ratio"` // used_memory / baseline's
	ValueRatio           float64 `json:"value_ratio"`  // value bytes / baseline's
	EncodeNs             float64 `json:"encode_ns"`    // p50
	EncodeP99Ns          float64 `json:"encode_p99_ns"`
	DecodeNs             float64 `json:"decode_ns"` // p50
	DecodeP99Ns          float64 `json:"decode_p99_ns"`
	EncodeRatio          float64 `json:"encode_ratio"` // p50 / baseline's p50
	DecodeRatio          float64 `json:"decode_ratio"`
	MeetsTargets         bool    `json:"meets_targets"` // on the point estimates

	// 95% intervals. Memory and value ratios: over the rounds' paired
	// ratios to the baseline (bench.PairedRatioCI), with the rounds' min
	// and max in memory_ratio_rounds. Encode and decode times: over the
	// rounds' p50s (bench.RoundValuesCI), since a machine drifts over a
	// run and a bootstrap over 200,000 times of one run would not show it.
	// Encode and decode ratios: a bootstrap over both codecs' recorded times
	// (bench.HistogramQuantileRatioCI).
	MemoryRatioCI95   bench.Interval    `json:"memory_ratio_ci95"`
	MemoryRatioRounds bench.RoundRatios `json:"memory_ratio_rounds"`
	ValueRatioCI95    bench.Interval    `json:"value_ratio_ci95"`
	EncodeNsCI95      bench.Interval    `json:"encode_ns_ci95"`
	DecodeNsCI95      bench.Interval    `json:"decode_ns_ci95"`
	EncodeRatioCI95   bench.Interval    `json:"encode_ratio_ci95"`
	DecodeRatioCI95   bench.Interval    `json:"decode_ratio_ci95"`
}

// Summary is the JSON summary: the best codec's figures at the top level.
type Summary struct {
	Bench              string  `json:"bench"`
	Profile            string  `json:"profile"`
	Records            int     `json:"records"`
	Baseline           string  `json:"baseline"`
	JSONBytesPerRecord float64 `json:"json_bytes_per_record"`
	BestCodec          string  `json:"best_codec"`
	MemoryRatio        float64 `json:"memory_ratio"`
	ValueRatio         float64 `json:"value_ratio"`
	EncodeNs           float64 `json:"encode_ns"`
	DecodeNs           float64 `json:"decode_ns"`
	TargetsMet         bool    `json:"targets_met"`
	// The best codec's intervals (see CodecFigures).
	MemoryRatioCI95 bench.Interval `json:"memory_ratio_ci95"`
	ValueRatioCI95  bench.Interval `json:"value_ratio_ci95"`
	EncodeNsCI95    bench.Interval `json:"encode_ns_ci95"`
	DecodeNsCI95    bench.Interval `json:"decode_ns_ci95"`
	// Targets of the best codec, judged on the intervals: memory_ratio,
	// encode_ns and decode_ns.
	Targets bench.Targets           `json:"targets"`
	Codecs  map[string]CodecFigures `json:"codecs"`
	Report  string                  `json:"report"`
	// RedisCluster is set by --redis-cluster only.
	RedisCluster *ClusterFigures `json:"redis_cluster,omitempty"`
	// Bucketed is the bucketed layout's figures (unless --bucketed-codec
	// none); its targets are in Targets as bucketed.*.
	Bucketed *BucketedFigures `json:"bucketed,omitempty"`
	// Server is the Redis server the formats were measured on, e.g.
	// "redis 7.0.15" or "valkey 8.1.8".
	Server string `json:"server"`
}

// BucketedFigures compares the bucketed layout with JSON (memory, encode,
// decode) and with today's keys layout of the same codec (memory, resolve
// latency), all from the same interleaved rounds.
type BucketedFigures struct {
	Codec        string `json:"codec"`
	BucketWidth  string `json:"bucket_width"`
	BucketShards int    `json:"bucket_shards"`
	ClickRate    int    `json:"click_rate"`
	FieldExpiry  bool   `json:"field_expiry"`
	// Buckets at the end of the run, records per bucket, and the
	// encodings of up to 1,000 of them (listpack unless a setting is low).
	Buckets          int64          `json:"buckets"`
	RecordsPerBucket float64        `json:"records_per_bucket"`
	Encodings        map[string]int `json:"encodings"`

	UsedMemoryPerRecord     float64 `json:"used_memory_per_record"`
	KeysUsedMemoryPerRecord float64 `json:"keys_used_memory_per_record"`
	// MemoryRatio: used_memory over JSON's; MemoryRatioToKeys: over the
	// keys layout's with the same codec (paired rounds, Student t).
	MemoryRatio           float64           `json:"memory_ratio"`
	MemoryRatioCI95       bench.Interval    `json:"memory_ratio_ci95"`
	MemoryRatioRounds     bench.RoundRatios `json:"memory_ratio_rounds"`
	MemoryRatioToKeys     float64           `json:"memory_ratio_to_keys"`
	MemoryRatioToKeysCI95 bench.Interval    `json:"memory_ratio_to_keys_ci95"`
	// The codec's encode and decode p50 over JSON's (bootstrap intervals).
	EncodeRatio     float64        `json:"encode_ratio"`
	EncodeRatioCI95 bench.Interval `json:"encode_ratio_ci95"`
	DecodeRatio     float64        `json:"decode_ratio"`
	DecodeRatioCI95 bench.Interval `json:"decode_ratio_ci95"`
	// Resolve through Store.Resolve, one at a time, of UUIDv7 records, the
	// layouts alternating request by request (timeResolvesPaired):
	// bucketed and keys layout, and their p50 and p99 ratios. The
	// intervals are bench.QuantileRatioOverRounds': the hull of a bootstrap
	// over all the latencies and a t interval over the rounds' ratios,
	// whose spread is in *_rounds.
	ResolveP50Ns          float64           `json:"resolve_p50_ns"`
	ResolveP99Ns          float64           `json:"resolve_p99_ns"`
	KeysResolveP50Ns      float64           `json:"keys_resolve_p50_ns"`
	KeysResolveP99Ns      float64           `json:"keys_resolve_p99_ns"`
	ResolveP50Ratio       float64           `json:"resolve_p50_ratio"`
	ResolveP50RatioCI95   bench.Interval    `json:"resolve_p50_ratio_ci95"`
	ResolveP50RatioRounds bench.RoundRatios `json:"resolve_p50_ratio_rounds"`
	ResolveP99Ratio       float64           `json:"resolve_p99_ratio"`
	ResolveP99RatioCI95   bench.Interval    `json:"resolve_p99_ratio_ci95"`
	ResolveP99RatioRounds bench.RoundRatios `json:"resolve_p99_ratio_rounds"`
	// Client ids (UUIDv4) in the bucketed layout: a create checks, and a
	// read probes, ProbeBuckets buckets of the id's shard; their times
	// beside UUIDv7 creates and resolves in the same store and rounds.
	ProbeBuckets                int            `json:"probe_buckets"`
	ClientIDCreateP50Ns         float64        `json:"client_id_create_p50_ns"`
	ClientIDCreateP99Ns         float64        `json:"client_id_create_p99_ns"`
	V7CreateP50Ns               float64        `json:"v7_create_p50_ns"`
	V7CreateP99Ns               float64        `json:"v7_create_p99_ns"`
	ClientIDCreateP50Ratio      float64        `json:"client_id_create_p50_ratio"`
	ClientIDCreateP50RatioCI95  bench.Interval `json:"client_id_create_p50_ratio_ci95"`
	ClientIDResolveP50Ns        float64        `json:"client_id_resolve_p50_ns"`
	ClientIDResolveP99Ns        float64        `json:"client_id_resolve_p99_ns"`
	ClientIDResolveP50Ratio     float64        `json:"client_id_resolve_p50_ratio"`
	ClientIDResolveP50RatioCI95 bench.Interval `json:"client_id_resolve_p50_ratio_ci95"`
}

// ClusterFigures is the summary's redis_cluster object: the masters'
// balance and the default codec's memory per record on the cluster beside
// the single Redis's in the same run.
type ClusterFigures struct {
	clusterbench.Balance
	Codec string `json:"codec"`
	// Layout is keys, or bucketed when the run measures the bucketed layout.
	Layout string `json:"layout"`
	// Sum over the masters of used_memory above each one's empty baseline,
	// per record.
	UsedMemoryPerRecord float64 `json:"used_memory_per_record"`
	// The same codec's used_memory_per_record on the single Redis.
	SingleUsedMemoryPerRecord float64 `json:"single_used_memory_per_record"`
}

// clusterLoad loads the rounds' records into a Redis Cluster with one codec,
// in the keys layout or, with store set, the bucketed one.
type clusterLoad struct {
	cl      *clusterbench.Cluster
	codec   linkstore.Codec
	store   *linkstore.Store
	records int
}

// load stores one chunk, pipelined, with compact keys.
func (c *clusterLoad) load(ctx context.Context, chunk []linkstore.Record, cfg Config, keys linkstore.KeyFormat) error {
	if c.store != nil {
		var batch createBatch
		for i := range chunk {
			value, err := c.codec.Encode(nil, &chunk[i])
			if err != nil {
				return err
			}
			batch.add(&chunk[i], value)
		}
		c.records += len(chunk)
		return batch.create(ctx, c.store, "the Redis Cluster")
	}
	pipe := c.cl.Client.Pipeline()
	buf := make([]byte, 0, 4096)
	keyBuf := make([]byte, 0, 64)
	for i := range chunk {
		var err error
		if buf, err = c.codec.Encode(buf[:0], &chunk[i]); err != nil {
			return err
		}
		keyBuf = linkstore.AppendKey(keyBuf[:0], keys, chunk[i].ClickID)
		pipe.Set(ctx, string(keyBuf), string(buf), cfg.TTL)
		c.records++
		if pipe.Len() == 1000 {
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("linkbench: pipelined SET into the Redis Cluster: %w", err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("linkbench: pipelined SET into the Redis Cluster: %w", err)
	}
	return nil
}

// format is one contender: a codec and a key format, in its own database.
type format struct {
	name      string // the codec's name, with "@bucketed" for the bucketed layout
	codec     linkstore.Codec
	keyFormat linkstore.KeyFormat
	db        int
	rdb       *redis.Client
	// store, when set, resolves a sample of each round's records (and, in
	// the bucketed layout, loads them).
	store    *linkstore.Store
	bucketed bool
	resolve  *hdrhistogram.Histogram
	// resolveRounds holds the resolve latencies of each round.
	resolveRounds []*bench.LatencyRecorder
	// Bucketed only: one-at-a-time creates and resolves of client UUIDv4
	// ids and of UUIDv7 ids.
	clientCreate, v7Create, clientResolve, v7Resolve *hdrhistogram.Histogram

	encode, decode       *hdrhistogram.Histogram // ns, 1 ns .. 10 s
	encodeLat, decodeLat *bench.LatencyRecorder  // for the report's charts
	usedMemory           int64
	valueBytes, keyBytes int64
	records              int
	sampleKeys           []string
	memoryUsage          float64

	// Per round: used_memory delta, value bytes, and p50 encode and decode
	// ns (from roundEncode and roundDecode, reset every round).
	roundUsedMemory, roundValueBytes []float64
	roundEncodeP50, roundDecodeP50   []float64
	roundEncode, roundDecode         *hdrhistogram.Histogram
}

// Run runs the benchmark, writes the report and prints progress to out
// (the caller prints the summary as the last stdout line).
func Run(ctx context.Context, cfg Config, out io.Writer) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	n := cfg.RecordCount()
	addr := cfg.RedisAddr
	if addr == "" {
		srv, err := redisproc.Start(ctx, cfg.RedisServer, linkstore.BucketRedisArgs()) // as the local stack sets them
		if err != nil {
			return Summary{}, fmt.Errorf("linkbench: --redis-server: %w (or pass --redis-addr of an idle Redis)", err)
		}
		fmt.Fprintf(out, "started redis-server pid %d on %s\n", srv.PID(), srv.Addr())
		defer func() { srv.Stop(); fmt.Fprintf(out, "stopped redis-server pid %d\n", srv.PID()) }()
		addr = srv.Addr()
	}

	train := linkstore.Generate(cfg.Seed+1, 2000)
	trainStart := time.Now()
	dict, err := linkstore.TrainDictionary(1, train, linkstore.TrainOptions{})
	if err != nil {
		return Summary{}, err
	}
	fmt.Fprintf(out, "trained dictionary version 1 on %d records in %s (zstd %d B, s2 %d B)\n", len(train), time.Since(trainStart).Round(time.Millisecond), len(dict.Bytes()), len(dict.S2Bytes()))
	dicts, _ := linkstore.NewDictionaries(dict)

	names := append([]string{linkstore.CodecJSONRaw}, slices.DeleteFunc(slices.Clone(cfg.Codecs), func(s string) bool { return s == linkstore.CodecJSONRaw })...)
	compactKeys, _ := linkstore.ParseKeyFormat(cfg.KeyFormat)
	var formats []*format
	var clients []*redis.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	bucketedAt := -1
	if cfg.bucketed() {
		bucketedAt = len(names)
		names = append(names, cfg.BucketedCodec)
	}
	for i, name := range names {
		codec, err := linkstore.NewCodec(name, linkstore.Options{ZstdConcurrency: 1}, dicts)
		if err != nil {
			return Summary{}, err
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr, DB: i, DialTimeout: 2 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, PoolSize: 2})
		clients = append(clients, rdb)
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			return Summary{}, fmt.Errorf("linkbench: FLUSHDB %d on %s: %w", i, addr, err)
		}
		f := &format{name: name, codec: codec, keyFormat: compactKeys, db: i, rdb: rdb,
			encode: newHistogram(), decode: newHistogram(), roundEncode: newHistogram(), roundDecode: newHistogram(),
			encodeLat: bench.NewLatencyRecorder(), decodeLat: bench.NewLatencyRecorder()}
		if name == linkstore.CodecJSONRaw {
			f.keyFormat = linkstore.KeyText
		}
		if cfg.bucketed() && name == cfg.BucketedCodec {
			f.bucketed = i == bucketedAt
			layout := linkstore.LayoutKeys
			if f.bucketed {
				f.name, layout = name+"@"+linkstore.LayoutBucketed, linkstore.LayoutBucketed
				f.clientCreate, f.v7Create, f.clientResolve, f.v7Resolve = newHistogram(), newHistogram(), newHistogram(), newHistogram()
			}
			if f.store, err = openStore(ctx, cfg, rdb, layout, dict); err != nil {
				return Summary{}, err
			}
			f.resolve = newHistogram()
		}
		formats = append(formats, f)
	}
	server, err := serverVersion(ctx, clients[0])
	if err != nil {
		return Summary{}, err
	}

	var cluster *clusterLoad
	var clusterBefore map[string]clusterbench.Node
	if cfg.RedisCluster > 0 {
		cl, err := clusterbench.Start(ctx, cfg.RedisCluster, out)
		if cl != nil {
			defer cl.Stop(out)
		}
		if err != nil {
			return Summary{}, err
		}
		codecName := linkstore.DefaultCodec
		if cfg.bucketed() {
			codecName = cfg.BucketedCodec
		}
		codec, err := linkstore.NewCodec(codecName, linkstore.Options{ZstdConcurrency: 1}, dicts)
		if err != nil {
			return Summary{}, err
		}
		cluster = &clusterLoad{cl: cl, codec: codec}
		if cfg.bucketed() {
			if cluster.store, err = openStore(ctx, cfg, cl.Client, linkstore.LayoutBucketed, nil); err != nil {
				return Summary{}, err
			}
		}
		if clusterBefore, err = cl.Snapshot(ctx); err != nil {
			return Summary{}, err
		}
	}

	rounds := (n + cfg.RoundRecords - 1) / cfg.RoundRecords
	gen := linkstore.NewGenerator(cfg.Seed)
	chunk := make([]linkstore.Record, 0, cfg.RoundRecords)
	progress := bench.NewProgress(out, "records loaded", int64(n))
	sides := make([]bench.Side, len(formats))
	for i, f := range formats {
		sides[i] = bench.Side{Name: f.name, Run: func(round int) error { return f.load(ctx, chunk, cfg, round == 0) }}
	}
	simStart := time.Now()
	// Interleave runs every side once per round; the chunk of the round is
	// generated before the round's first side runs.
	loaded := 0
	for round := range rounds {
		size := min(cfg.RoundRecords, n-loaded)
		chunk = chunk[:0]
		for j := range size {
			rec := gen.Next()
			simulateClick(&rec, simStart.Add(time.Duration(loaded+j)*time.Second/time.Duration(cfg.ClickRate)), cfg.TTL)
			chunk = append(chunk, rec)
		}
		one := make([]bench.Side, len(sides))
		for j, i := range bench.RoundOrder(round, len(sides)) {
			one[j] = sides[i]
		}
		if err := bench.Interleave(1, one...); err != nil {
			return Summary{}, err
		}
		if err := timeResolvesPaired(ctx, chunk, cfg, round, formats); err != nil {
			return Summary{}, err
		}
		if bucketedAt >= 0 {
			if err := formats[bucketedAt].timeClientIDs(ctx, chunk, cfg, round); err != nil {
				return Summary{}, err
			}
		}
		if cluster != nil {
			if err := cluster.load(ctx, chunk, cfg, compactKeys); err != nil {
				return Summary{}, err
			}
		}
		loaded += size
		progress.Add(int64(size))
	}
	progress.Done()
	for _, f := range formats {
		if err := f.measureSample(ctx); err != nil {
			return Summary{}, err
		}
	}
	sum := summarize(cfg, n, formats)
	sum.Server = server
	if cfg.bucketed() {
		keysAt := slices.IndexFunc(formats, func(f *format) bool { return f.name == cfg.BucketedCodec })
		if err := summarizeBucketed(ctx, cfg, &sum, formats[bucketedAt], formats[keysAt]); err != nil {
			return Summary{}, err
		}
	}
	if cluster != nil {
		after, err := cluster.cl.Snapshot(ctx)
		if err != nil {
			return Summary{}, err
		}
		bal, err := cluster.cl.Balance(clusterBefore, after)
		if err != nil {
			return Summary{}, err
		}
		if bal.LargestKeysByMaster, err = cluster.cl.LargestKeys(ctx, clusterbench.ReportedLargestKeys); err != nil {
			return Summary{}, err
		}
		var mem int64
		for _, m := range bal.UsedMemoryByMaster {
			mem += m
		}
		single := sum.Codecs[cluster.codec.Name()]
		layout := linkstore.LayoutKeys
		if cluster.store != nil {
			single, layout = sum.Codecs[formats[bucketedAt].name], linkstore.LayoutBucketed
		}
		sum.RedisCluster = &ClusterFigures{Balance: bal, Codec: cluster.codec.Name(), Layout: layout,
			UsedMemoryPerRecord:       round2(float64(mem) / float64(max(cluster.records, 1))),
			SingleUsedMemoryPerRecord: single.UsedMemoryPerRecord}
		bal.Targets(sum.Targets)
	}
	path, err := writeReport(cfg, sum, formats)
	if err != nil {
		return Summary{}, err
	}
	sum.Report = path
	return sum, nil
}

// load encodes, decodes (checking a sample) and stores one chunk, between
// two used_memory readings.
func (f *format) load(ctx context.Context, chunk []linkstore.Record, cfg Config, firstRound bool) error {
	before, err := usedMemory(ctx, f.rdb)
	if err != nil {
		return err
	}
	valueBytes := f.valueBytes
	f.roundEncode.Reset()
	f.roundDecode.Reset()
	pipe := f.rdb.Pipeline()
	buf := make([]byte, 0, 4096)
	keyBuf := make([]byte, 0, 64)
	var batch createBatch
	for i := range chunk {
		rec := &chunk[i]
		start := time.Now()
		buf, err = f.codec.Encode(buf[:0], rec)
		encoded := time.Since(start)
		if err != nil {
			return err
		}
		start = time.Now()
		got, err := f.codec.Decode(buf)
		decoded := time.Since(start)
		if err != nil {
			return fmt.Errorf("decode record %d: %w", i, err)
		}
		if i%97 == 0 {
			if want := rec.Normalized(); !reflect.DeepEqual(&want, got) {
				return fmt.Errorf("%s: record %s does not round-trip", f.codec.Name(), rec.ClickID)
			}
		}
		_ = f.encode.RecordValue(int64(encoded))
		_ = f.decode.RecordValue(int64(decoded))
		_ = f.roundEncode.RecordValue(int64(encoded))
		_ = f.roundDecode.RecordValue(int64(decoded))
		f.encodeLat.Record(encoded)
		f.decodeLat.Record(decoded)
		f.valueBytes += int64(len(buf))
		f.records++
		if f.bucketed {
			batch.add(rec, bytes.Clone(buf))
			f.keyBytes += int64(len(rec.ClickID)) // the field
			continue
		}
		keyBuf = linkstore.AppendKey(keyBuf[:0], f.keyFormat, rec.ClickID)
		key := string(keyBuf)
		if firstRound && len(f.sampleKeys) < cfg.MemorySample {
			f.sampleKeys = append(f.sampleKeys, key)
		}
		pipe.Set(ctx, key, string(buf), cfg.TTL)
		f.keyBytes += int64(len(key))
		if pipe.Len() == 1000 {
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("linkbench: pipelined SET into db %d: %w", f.db, err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("linkbench: pipelined SET into db %d: %w", f.db, err)
	}
	if err := batch.create(ctx, f.store, fmt.Sprintf("db %d", f.db)); err != nil {
		return err
	}
	after, err := usedMemory(ctx, f.rdb)
	if err != nil {
		return err
	}
	f.usedMemory += after - before
	f.roundUsedMemory = append(f.roundUsedMemory, float64(after-before))
	f.roundValueBytes = append(f.roundValueBytes, float64(f.valueBytes-valueBytes))
	f.roundEncodeP50 = append(f.roundEncodeP50, float64(f.roundEncode.ValueAtQuantile(50)))
	f.roundDecodeP50 = append(f.roundDecodeP50, float64(f.roundDecode.ValueAtQuantile(50)))
	return nil
}

func (f *format) measureSample(ctx context.Context) error {
	var total int64
	for _, key := range f.sampleKeys {
		n, err := f.rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil {
			return fmt.Errorf("linkbench: MEMORY USAGE in db %d: %w", f.db, err)
		}
		total += n
	}
	if len(f.sampleKeys) > 0 {
		f.memoryUsage = float64(total) / float64(len(f.sampleKeys))
	}
	return nil
}

// usedMemory reads used_memory from INFO memory.
func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("linkbench: INFO memory: %w", err)
	}
	return parseUsedMemory(info)
}

func parseUsedMemory(info string) (int64, error) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("linkbench: INFO memory has no used_memory line")
}

func summarize(cfg Config, n int, formats []*format) Summary {
	base := formats[0]
	per := func(v int64, f *format) float64 { return round2(float64(v) / float64(max(f.records, 1))) }
	sum := Summary{Bench: "links", Profile: string(cfg.Profile), Records: n, Baseline: base.codec.Name() + " + text keys",
		JSONBytesPerRecord: per(base.valueBytes, base), Codecs: map[string]CodecFigures{}}
	if cfg.Records > 0 {
		sum.Profile = "custom"
	}
	baseEnc, baseDec := float64(base.encode.ValueAtQuantile(50)), float64(base.decode.ValueAtQuantile(50))
	var best *CodecFigures
	for _, f := range formats {
		layout := linkstore.LayoutKeys
		if f.bucketed {
			layout = linkstore.LayoutBucketed
		}
		fig := CodecFigures{
			Codec: f.codec.Name(), KeyFormat: f.keyFormat.String(), Layout: layout, Records: f.records,
			UsedMemoryPerRecord: per(f.usedMemory, f), MemoryUsagePerRecord: round2(f.memoryUsage),
			ValueBytesPerRecord: per(f.valueBytes, f), KeyBytesPerRecord: per(f.keyBytes, f),
			MemoryRatio: bench.Ratio(float64(f.usedMemory), float64(base.usedMemory)),
			ValueRatio:  bench.Ratio(float64(f.valueBytes), float64(base.valueBytes)),
			EncodeNs:    float64(f.encode.ValueAtQuantile(50)), EncodeP99Ns: float64(f.encode.ValueAtQuantile(99)),
			DecodeNs: float64(f.decode.ValueAtQuantile(50)), DecodeP99Ns: float64(f.decode.ValueAtQuantile(99)),
		}
		fig.EncodeRatio = bench.Ratio(fig.EncodeNs, baseEnc)
		fig.DecodeRatio = bench.Ratio(fig.DecodeNs, baseDec)
		fig.MemoryRatioRounds = bench.PairedRatioCI(base.roundUsedMemory, f.roundUsedMemory)
		fig.MemoryRatioCI95 = fig.MemoryRatioRounds.IntervalAround(fig.MemoryRatio)
		fig.ValueRatioCI95 = bench.PairedRatioCI(base.roundValueBytes, f.roundValueBytes).IntervalAround(fig.ValueRatio)
		fig.EncodeNsCI95 = bench.RoundValuesCI(f.roundEncodeP50).IntervalAround(fig.EncodeNs)
		fig.DecodeNsCI95 = bench.RoundValuesCI(f.roundDecodeP50).IntervalAround(fig.DecodeNs)
		fig.EncodeRatioCI95 = bench.HistogramQuantileRatioCI(base.encode, f.encode, 0.5, cfg.Seed)
		fig.DecodeRatioCI95 = bench.HistogramQuantileRatioCI(base.decode, f.decode, 0.5, cfg.Seed)
		fig.MeetsTargets = fig.MemoryRatio <= TargetMemoryRatio && fig.EncodeNs <= TargetEncodeNs && fig.DecodeNs <= TargetDecodeNs
		sum.Codecs[f.name] = fig
	}
	// Best: among the codecs in the keys layout (the bucketed layout has
	// its own figures and targets), the smallest memory among codecs meeting every target; else
	// among those within the memory target and no slower than the baseline
	// (times on a loaded machine drift, ratios less so); else among those no
	// slower than the baseline; else the smallest memory.
	pick := func(ok func(CodecFigures) bool) *CodecFigures {
		var b *CodecFigures
		for _, f := range formats[1:] {
			fig := sum.Codecs[f.name]
			if f.bucketed {
				continue
			}
			if ok(fig) && (b == nil || fig.UsedMemoryPerRecord < b.UsedMemoryPerRecord) {
				b = &fig
			}
		}
		return b
	}
	notSlower := func(c CodecFigures) bool { return c.EncodeRatio <= 1 && c.DecodeRatio <= 1 }
	for _, ok := range []func(CodecFigures) bool{
		func(c CodecFigures) bool { return c.MeetsTargets },
		func(c CodecFigures) bool { return c.MemoryRatio <= TargetMemoryRatio && notSlower(c) },
		notSlower,
		func(CodecFigures) bool { return true },
	} {
		if best = pick(ok); best != nil {
			break
		}
	}
	if best == nil { // only the baseline was measured
		b := sum.Codecs[base.name]
		best = &b
	}
	sum.BestCodec, sum.MemoryRatio, sum.ValueRatio = best.Codec, best.MemoryRatio, best.ValueRatio
	sum.EncodeNs, sum.DecodeNs, sum.TargetsMet = best.EncodeNs, best.DecodeNs, best.MeetsTargets
	sum.MemoryRatioCI95, sum.ValueRatioCI95 = best.MemoryRatioCI95, best.ValueRatioCI95
	sum.EncodeNsCI95, sum.DecodeNsCI95 = best.EncodeNsCI95, best.DecodeNsCI95
	sum.Targets = bench.Targets{
		"memory_ratio": bench.AtMost(TargetMemoryRatio).Evaluate(sum.MemoryRatio, sum.MemoryRatioCI95),
		"encode_ns":    bench.AtMost(TargetEncodeNs).Evaluate(sum.EncodeNs, sum.EncodeNsCI95),
		"decode_ns":    bench.AtMost(TargetDecodeNs).Evaluate(sum.DecodeNs, sum.DecodeNsCI95),
	}
	return sum
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func writeReport(cfg Config, sum Summary, formats []*format) (string, error) {
	command := cfg.Command
	if command == "" {
		command = bench.CommandLine()
	}
	r := bench.NewReport("links", "Compact click / deep-link store: Redis memory per format", command)
	r.Add(bench.Section{Title: "What was measured", Text: fmt.Sprintf(
		"%d generated click records (~%.0f B of JSON each) were loaded into a dedicated Redis once per format, each format into its own database, "+
			"in %d interleaved rounds of up to %d records (ABBA order). Memory is Redis's own: the INFO memory used_memory delta around each "+
			"format's rounds, per record, and the mean MEMORY USAGE of %d sample keys. The baseline is %s: text UUID keys (36 B) and raw JSON "+
			"values, each with a %s TTL. Encode/decode times are per record (p50/p99 from HDR histograms), measured in the same rounds; "+
			"absolute times on a shared machine are noise, the ratios to the baseline are the figures. Targets: memory ratio <= %.2f with "+
			"encode <= %d ns and decode <= %d ns.",
		sum.Records, sum.JSONBytesPerRecord, (sum.Records+cfg.RoundRecords-1)/cfg.RoundRecords, cfg.RoundRecords, cfg.MemorySample,
		sum.Baseline, cfg.TTL, TargetMemoryRatio, TargetEncodeNs, TargetDecodeNs)})
	t := &bench.Table{Header: []string{"format", "key", "used_memory B/rec", "MEMORY USAGE B/rec", "value B/rec", "key B/rec", "memory ratio", "value ratio", "encode p50 ns", "encode p99 ns", "decode p50 ns", "decode p99 ns", "encode ratio", "decode ratio", "targets"}}
	var labels []string
	var mem, val []float64
	for _, f := range formats {
		c := sum.Codecs[f.name]
		t.Rows = append(t.Rows, []string{f.name, c.KeyFormat, ff(c.UsedMemoryPerRecord), ff(c.MemoryUsagePerRecord), ff(c.ValueBytesPerRecord), ff(c.KeyBytesPerRecord),
			ff(c.MemoryRatio), ff(c.ValueRatio), ff(c.EncodeNs), ff(c.EncodeP99Ns), ff(c.DecodeNs), ff(c.DecodeP99Ns), ff(c.EncodeRatio), ff(c.DecodeRatio), strconv.FormatBool(c.MeetsTargets)})
		labels = append(labels, f.name)
		mem = append(mem, c.UsedMemoryPerRecord)
		val = append(val, c.ValueBytesPerRecord)
	}
	r.Add(bench.Section{Title: "Per format", Text: fmt.Sprintf("Best codec: %s (memory ratio %.3f, encode p50 %.0f ns, decode p50 %.0f ns; targets met: %v).",
		sum.BestCodec, sum.MemoryRatio, sum.EncodeNs, sum.DecodeNs, sum.TargetsMet), Table: t,
		Charts: []bench.Chart{{Title: "Bytes per record", YLabel: "bytes", Kind: bench.BarChart, Series: []bench.Series{
			{Name: "used_memory", Labels: labels, Y: mem}, {Name: "value", Labels: labels, Y: val}}}}})
	var encNames, decNames []string
	var encRec, decRec []*bench.LatencyRecorder
	for _, f := range formats {
		encNames, decNames = append(encNames, f.name), append(decNames, f.name)
		encRec, decRec = append(encRec, f.encodeLat), append(decRec, f.decodeLat)
	}
	encChart := bench.LatencyCDF("Encode time per record", encNames, encRec)
	encChart.LogY = true
	decChart := bench.LatencyCDF("Decode time per record", decNames, decRec)
	decChart.LogY = true
	r.Add(bench.Section{Title: "Encode and decode time", Text: "Percentile curves of the per-record times (the report's recorders resolve ~0.5 µs; the table's ns figures come from 1 ns histograms).", Charts: []bench.Chart{encChart, decChart}})
	var figures []bench.Figure
	for _, f := range formats[1:] {
		c := sum.Codecs[f.name]
		figures = append(figures,
			bench.Figure{Name: f.name + " memory", Point: c.MemoryRatio, CI95: c.MemoryRatioCI95, Rounds: &c.MemoryRatioRounds},
			bench.Figure{Name: f.name + " encode", Point: c.EncodeRatio, CI95: c.EncodeRatioCI95},
			bench.Figure{Name: f.name + " decode", Point: c.DecodeRatio, CI95: c.DecodeRatioCI95})
	}
	if b := sum.Bucketed; b != nil {
		figures = append(figures, bench.Figure{Name: "bucketed resolve p99 / keys", Point: b.ResolveP99Ratio, CI95: b.ResolveP99RatioCI95, Rounds: &b.ResolveP99RatioRounds},
			bench.Figure{Name: "bucketed resolve p50 / keys", Point: b.ResolveP50Ratio, CI95: b.ResolveP50RatioCI95, Rounds: &b.ResolveP50RatioRounds})
		r.Add(bucketedSection(b))
	}
	r.Add(bench.IntervalSection(figures))
	targets := bench.TargetsSection(sum.Targets)
	targets.Text += fmt.Sprintf(" The targets are the best codec's (%s). Its encode and decode intervals are over the %d rounds' p50s: encode %s ns, decode %s ns.",
		sum.BestCodec, len(formats[0].roundEncodeP50), fmtInterval(sum.EncodeNsCI95), fmtInterval(sum.DecodeNsCI95))
	r.Add(targets)
	if c := sum.RedisCluster; c != nil {
		single := "not measured (the codec was left out of --codecs)"
		if _, ok := sum.Codecs[c.Codec]; ok {
			single = ff(c.SingleUsedMemoryPerRecord) + " B"
		}
		r.Add(bench.Section{Title: fmt.Sprintf("Redis Cluster of %d masters beside the single Redis", c.Masters), Text: fmt.Sprintf(
			"In every round, after the formats, the same records were loaded into a local Redis Cluster of %d masters (no replicas) with %s and compact keys. "+
				"used_memory per record: cluster %s B (sum over the masters of used_memory above each one's empty baseline), single Redis %s. "+
				"Largest master's share over the smallest's: commands %.4f, memory %.4f (target <= %.1f each).",
			c.Masters, c.Codec, ff(c.UsedMemoryPerRecord), single, c.OpsShareMaxOverMin, c.MemoryShareMaxOverMin, clusterbench.TargetShareMaxOverMin),
			Table: c.Table()})
	}
	r.SetSummary(sum)
	return r.WriteHTML(cfg.ReportDir)
}

func ff(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func fmtInterval(iv bench.Interval) string {
	if !iv.Known() {
		return "none"
	}
	return "[" + ff(iv.Low) + ", " + ff(iv.High) + "]"
}
