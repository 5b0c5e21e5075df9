package linkbench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/linkstore"
)

// TestSmoke runs the benchmark with a tiny size against its own
// redis-server and checks the summary line's keys and basic sanity.
func TestSmoke(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Unavailable(t, err)
	}
	cfg := Defaults()
	cfg.Records = 1200
	cfg.RoundRecords = 300
	cfg.MemorySample = 50
	cfg.ResolveSample, cfg.ClientIDSample = 50, 10
	cfg.ReportDir = t.TempDir()
	cfg.Command = "go test ./benchmarks/linkbench -run TestSmoke"
	var progress bytes.Buffer
	sum, err := Run(context.Background(), cfg, &progress)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	var stdout bytes.Buffer
	stdout.WriteString("some progress line\n")
	if err := bench.PrintSummary(&stdout, sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("summary: %s", stdout.String())
	parsed, err := bench.ParseSummary(stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"bench", "records", "json_bytes_per_record", "best_codec", "memory_ratio", "value_ratio", "encode_ns", "decode_ns", "codecs"}
	for _, name := range linkstore.CodecNames() {
		keys = append(keys, "codecs."+name+".used_memory_per_record", "codecs."+name+".encode_ns", "codecs."+name+".decode_ns")
	}
	if missing := bench.MissingKeys(parsed, keys...); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, stdout.String())
	}
	ratioKeys := []string{"memory_ratio", "value_ratio", "encode_ns", "decode_ns"}
	for _, name := range linkstore.CodecNames() {
		for _, k := range []string{"memory_ratio", "value_ratio", "encode_ns", "decode_ns", "encode_ratio", "decode_ratio"} {
			ratioKeys = append(ratioKeys, "codecs."+name+"."+k)
		}
	}
	if problems := bench.IntervalProblems(parsed, ratioKeys...); len(problems) > 0 {
		t.Errorf("intervals: %q\n%s", problems, stdout.String())
	}
	if len(sum.Targets) != 7 {
		t.Errorf("targets %v, want memory_ratio, encode_ns, decode_ns and the 4 bucketed.* ones", sum.Targets)
	}
	bucketedKeys := []string{"bucketed.memory_ratio", "bucketed.memory_ratio_to_keys", "bucketed.resolve_p99_ratio", "bucketed.resolve_p50_ratio",
		"bucketed.encode_ratio", "bucketed.decode_ratio", "bucketed.client_id_create_p50_ratio", "bucketed.client_id_resolve_p50_ratio"}
	if missing := bench.MissingKeys(parsed, append(bucketedKeys, "server")...); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, stdout.String())
	}
	for _, name := range []string{"bucketed.memory_ratio", "bucketed.encode_ratio", "bucketed.decode_ratio", "bucketed.resolve_p99_ratio"} {
		if _, ok := sum.Targets[name]; !ok {
			t.Errorf("targets lack %s: %v", name, sum.Targets)
		}
	}
	if problems := bench.IntervalProblems(parsed, bucketedKeys...); len(problems) > 0 {
		t.Errorf("bucketed intervals: %q", problems)
	}
	b := sum.Bucketed
	if b.Encodings["listpack"] == 0 || b.Encodings["hashtable"] != 0 || b.Buckets == 0 {
		t.Errorf("bucket encodings %v of %d buckets: want listpacks only", b.Encodings, b.Buckets)
	}
	// The bucketed layout saves Redis's per-key cost: below the keys layout
	// of the same codec, whose values it stores unchanged.
	if b.MemoryRatioToKeys >= 1 || b.UsedMemoryPerRecord <= sum.Codecs[b.Codec].ValueBytesPerRecord {
		t.Errorf("bucketed %v B/record, keys layout %v, values %v: want values < bucketed < keys", b.UsedMemoryPerRecord, b.KeysUsedMemoryPerRecord, sum.Codecs[b.Codec].ValueBytesPerRecord)
	}
	if parsed["bench"] != "links" || parsed["records"] != float64(1200) {
		t.Fatalf("bench %v records %v", parsed["bench"], parsed["records"])
	}
	base := sum.Codecs[linkstore.CodecJSONRaw]
	if base.MemoryRatio != 1 || base.KeyBytesPerRecord != 36 || base.ValueBytesPerRecord < 900 {
		t.Fatalf("baseline figures %+v: want ratio 1, 36-byte keys, ~1 KB values", base)
	}
	if base.UsedMemoryPerRecord <= base.ValueBytesPerRecord {
		t.Fatalf("baseline used_memory %v B/record is not above its value size %v", base.UsedMemoryPerRecord, base.ValueBytesPerRecord)
	}
	s2 := sum.Codecs[linkstore.CodecProtoS2Dict]
	if s2.KeyBytesPerRecord != float64(linkstore.KeyRawLen) || s2.ValueRatio >= 0.5 || s2.MemoryRatio >= 0.6 {
		t.Fatalf("proto+s2+dict figures %+v: want raw keys and well under half the baseline", s2)
	}
}

func TestConfigValidateNamesFlags(t *testing.T) {
	for flag, mutate := range map[string]func(*Config){
		"--profile":    func(c *Config) { c.Profile = "huge" },
		"--codecs":     func(c *Config) { c.Codecs = []string{"proto+lz4"} },
		"--key-format": func(c *Config) { c.KeyFormat = "text" },
		"--records":    func(c *Config) { c.Records = -1 },
	} {
		cfg := Defaults()
		mutate(&cfg)
		err := cfg.Validate()
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(flag)) {
			t.Errorf("%s: Validate() = %v, want an error naming the flag", flag, err)
		}
	}
}

func TestParseUsedMemory(t *testing.T) {
	got, err := parseUsedMemory("# Memory\r\nused_memory:1234567\r\nused_memory_human:1.18M\r\n")
	if err != nil || got != 1234567 {
		t.Fatalf("parseUsedMemory = %d, %v; want 1234567", got, err)
	}
	if _, err := parseUsedMemory("# Memory\r\n"); err == nil {
		t.Fatal("no used_memory line: want an error")
	}
}

// TestSmokeRedisCluster runs the benchmark tiny with --redis-cluster 3: it
// starts its own 3-master cluster, and the summary must hold the
// redis_cluster object with ratios >= 1 (not their target: a few thousand
// records on 3 masters are not balanced to 1.2) and the two extra targets.
func TestSmokeRedisCluster(t *testing.T) {
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Unavailable(t, err)
		}
	}
	cfg := Defaults()
	cfg.Records = 3000
	cfg.RoundRecords = 1000
	cfg.MemorySample = 50
	cfg.RedisCluster = 3
	cfg.ReportDir = t.TempDir()
	cfg.Command = "go test ./benchmarks/linkbench -run TestSmokeRedisCluster"
	var progress bytes.Buffer
	sum, err := Run(context.Background(), cfg, &progress)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	var stdout bytes.Buffer
	if err := bench.PrintSummary(&stdout, sum); err != nil {
		t.Fatal(err)
	}
	parsed, err := bench.ParseSummary(stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if missing := bench.MissingKeys(parsed, "redis_cluster.masters", "redis_cluster.ops_share_max_over_min", "redis_cluster.memory_share_max_over_min",
		"redis_cluster.used_memory_per_record", "redis_cluster.single_used_memory_per_record", "memory_ratio"); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, stdout.String())
	}
	c := sum.RedisCluster
	if c.Masters != 3 || c.OpsShareMaxOverMin < 1 || c.MemoryShareMaxOverMin < 1 {
		t.Fatalf("redis_cluster %+v: want 3 masters and both ratios >= 1", c)
	}
	if c.UsedMemoryPerRecord <= 0 || c.SingleUsedMemoryPerRecord <= 0 {
		t.Fatalf("used_memory per record: cluster %v, single %v; want both > 0", c.UsedMemoryPerRecord, c.SingleUsedMemoryPerRecord)
	}
	for _, k := range []string{"redis_cluster.ops_share_max_over_min", "redis_cluster.memory_share_max_over_min"} {
		if _, ok := sum.Targets[k]; !ok {
			t.Errorf("targets lack %s: %v", k, sum.Targets)
		}
	}
	if html, err := os.ReadFile(sum.Report); err != nil || !strings.Contains(string(html), "Redis Cluster of 3 masters beside the single Redis") {
		t.Errorf("report %q lacks the cluster's section (read error: %v)", sum.Report, err)
	}
	if !strings.Contains(progress.String(), "stopped redis-cluster-3 (pid") {
		t.Errorf("progress does not say the cluster's nodes were stopped:\n%s", progress.String())
	}
}
