package reindex

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/layout"
)

var testAliases = []string{"baedal_shops_nested", "baedal_shops", "baedal_menus"}

func TestOptionsValidateNamesFieldAndAllowedValues(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*Options)
		field   string
		allowed string
	}{
		{"alias", func(o *Options) { o.Alias = "nope" }, "alias", "baedal_shops_nested, baedal_shops, baedal_menus"},
		{"slices", func(o *Options) { o.Slices = "0" }, "slices", "auto or 1..64"},
		{"slices word", func(o *Options) { o.Slices = "many" }, "slices", "auto or 1..64"},
		{"rps zero", func(o *Options) { o.RequestsPerSecond = 0 }, "requests_per_second", "-1 (unthrottled) or > 0"},
		{"replicas during copy", func(o *Options) { o.ReplicasDuringCopy = 9 }, "replicas_during_copy", "0..8"},
		{"refresh during copy", func(o *Options) { o.RefreshDuringCopy = "fast" }, "refresh_during_copy", "-1 or a duration like 1s, 30s"},
		{"shards", func(o *Options) { o.Shards = 65 }, "shards", "0 (keep) or 1..64"},
		{"body aliases", func(o *Options) { o.Body = json.RawMessage(`{"aliases":{}}`) }, "body", "settings, mappings"},
		{"body array", func(o *Options) { o.Body = json.RawMessage(`[1]`) }, "body", "a JSON object with settings and mappings"},
		{"batch", func(o *Options) { o.BatchSize = 0 }, "batch_size", "1..10000"},
	}
	for _, tc := range cases {
		o := DefaultOptions()
		o.Alias = "baedal_shops"
		tc.mutate(&o)
		err := o.Validate(testAliases)
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: got %v, want a FieldError", tc.name, err)
			continue
		}
		if fe.Field != tc.field || fe.Allowed != tc.allowed {
			t.Errorf("%s: field %q allowed %q, want %q %q", tc.name, fe.Field, fe.Allowed, tc.field, tc.allowed)
		}
	}
	o := DefaultOptions()
	o.Alias = "baedal_menus"
	o.Slices, o.RequestsPerSecond, o.RefreshDuringCopy, o.RefreshInterval = "6", 500, "30s", "500ms"
	if err := o.Validate(testAliases); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

func TestParseSlices(t *testing.T) {
	for in, want := range map[string]int{"auto": 0, "1": 1, "64": 64} {
		if got, err := ParseSlices(in); err != nil || got != want {
			t.Errorf("ParseSlices(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "65", "-1", "auto ", "1.5"} {
		if _, err := ParseSlices(bad); err == nil {
			t.Errorf("ParseSlices(%q) accepted", bad)
		}
	}
}

func TestStreamIDBefore(t *testing.T) {
	cases := map[string]string{"5-3": "5-2", "5-0": "4-18446744073709551615", "0-0": "0-0", "1700000000000-0": "1699999999999-18446744073709551615"}
	for in, want := range cases {
		id, err := ParseStreamID(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := id.Before().String(); got != want {
			t.Errorf("%s.Before() = %s, want %s", in, got, want)
		}
		if in != "0-0" && !id.Before().Less(id) {
			t.Errorf("%s.Before() is not less", in)
		}
	}
	if _, err := ParseStreamID("x-1"); err == nil {
		t.Error("bad id accepted")
	}
}

func TestTargetBodySetsCopySettingsAndDropsAliases(t *testing.T) {
	in := `{"settings":{"index.number_of_shards":2,"number_of_replicas":1,"analysis":{"x":1}},"mappings":{"dynamic":"strict"},"aliases":{"a":{}}}`
	out, err := targetBody([]byte(in), 6, 0, "-1")
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Settings struct {
			Index map[string]any `json:"index"`
		} `json:"settings"`
		Mappings map[string]any `json:"mappings"`
		Aliases  any            `json:"aliases"`
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	idx := b.Settings.Index
	if idx["number_of_shards"] != 6.0 || idx["number_of_replicas"] != 0.0 || idx["refresh_interval"] != "-1" || idx["analysis"] == nil ||
		idx["auto_expand_replicas"] != "false" {
		t.Errorf("index settings %v", idx)
	}
	if idx["translog.durability"] != "request" {
		t.Errorf("copy-time translog durability %v, want request", idx["translog.durability"])
	}
	if b.Aliases != nil || b.Mappings["dynamic"] != "strict" {
		t.Errorf("body %s", out)
	}
	keep, _ := targetBody([]byte(`{"settings":{"index":{"number_of_shards":3}}}`), 0, 1, "1s")
	if !strings.Contains(string(keep), `"number_of_shards":3`) {
		t.Errorf("shards 0 must keep the body's: %s", keep)
	}
}

func TestFinalDurabilityIsTheBodys(t *testing.T) {
	for body, want := range map[string]string{
		`{"settings":{"index":{"translog.durability":"async"}}}`:      "async",
		`{"settings":{"index":{"translog":{"durability":"async"}}}}`:  "async",
		`{"settings":{"index.translog.durability":"async"}}`:          "async",
		`{"settings":{"translog.durability":"request"}}`:              "request",
		`{"settings":{"index":{"number_of_shards":1}},"mappings":{}}`: "",
	} {
		got, err := finalDurability([]byte(body))
		if err != nil || got != want {
			t.Errorf("finalDurability(%s) = %q, %v; want %q", body, got, err, want)
		}
		out, err := targetBody([]byte(body), 0, 0, "-1")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(out), "durability") != 1 || !strings.Contains(string(out), `"translog.durability":"request"`) {
			t.Errorf("targetBody(%s) = %s: want exactly one durability, request", body, out)
		}
	}
	// The hot layout's bodies carry async, which the target gets back after the swap.
	cfg := layout.Defaults()
	for _, role := range []string{layout.RoleHotShops, layout.RoleHotMenus} {
		body, err := cfg.IndexBody(role)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := finalDurability(body); got != layout.DurabilityAsync {
			t.Errorf("%s: final durability %q, want async", role, got)
		}
	}
}

// A running sliced task and a finished one with failures, as OpenSearch 3
// answers GET _tasks/<id>.
const runningTask = `{"completed":false,"task":{"node":"n","id":7,"type":"transport","action":"indices:data/write/reindex",
 "status":{"slice_id":null,"total":1000,"updated":10,"created":290,"deleted":0,"batches":3,"version_conflicts":100,"noops":0,
 "retries":{"bulk":0,"search":0},"throttled_millis":0,"requests_per_second":-1.0,"throttled_until_millis":0,"slices":[]},
 "description":"reindex from [a] to [b]","start_time_in_millis":1,"running_time_in_nanos":4000000000,"cancellable":true,"cancelled":false}}`

const failedTask = `{"completed":true,"task":{"status":{"total":10},"running_time_in_nanos":1000000000},
 "response":{"took":5,"total":10,"updated":0,"created":8,"deleted":0,"batches":1,"version_conflicts":0,"noops":0,
 "failures":[{"index":"b","id":"3","cause":{"type":"mapper_parsing_exception","reason":"bad"},"status":400},
             {"index":"b","id":"4","cause":{"type":"mapper_parsing_exception","reason":"bad"},"status":400}]}}`

func TestParseTaskProgressAndFailures(t *testing.T) {
	s, err := parseTask([]byte(runningTask))
	if err != nil {
		t.Fatal(err)
	}
	if s.Completed || s.Done() != 400 || s.VersionConflicts != 100 || s.Total != 1000 {
		t.Errorf("running: %+v", s)
	}
	if f := s.Fraction(); f != 0.4 {
		t.Errorf("fraction %v, want 0.4", f)
	}
	// 400 docs in 4 s = 100/s; 600 left → 6 s.
	if eta := s.ETA(); eta != 6*time.Second {
		t.Errorf("ETA %s, want 6s", eta)
	}
	f, err := parseTask([]byte(failedTask))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Completed || f.Failures != 2 || len(f.FailureSamples) != 2 || !strings.Contains(f.FailureSamples[0], "mapper_parsing_exception") || f.Created != 8 {
		t.Errorf("failed: %+v", f)
	}
	if f.ETA() != 0 {
		t.Errorf("completed task has ETA %s", f.ETA())
	}
}

func TestParseOptionsProblems(t *testing.T) {
	_, err := ParseOptions([]byte(`{"alias":"baedal_shops","slices":"lots"}`), testAliases)
	var p *api.Problem
	if !errors.As(err, &p) || p.Status != 400 || p.Field != "slices" || len(p.Allowed) == 0 {
		t.Fatalf("got %#v", err)
	}
	if _, err := ParseOptions([]byte(`{"alias":"baedal_shops","colour":1}`), testAliases); !errors.As(err, &p) || p.Field != "colour" || !slices.Contains(p.Allowed, "batch_size") {
		t.Errorf("unknown field: %v, want it named with the allowed fields", err)
	}
	// Details speak JSON, not Go.
	for body, field := range map[string]string{`{"shards":"x"}`: "shards", `[]`: "body", `{"requests_per_second":true}`: "requests_per_second"} {
		_, err := ParseOptions([]byte(body), testAliases)
		if !errors.As(err, &p) || p.Field != field || strings.Contains(p.Detail, "Go ") || strings.Contains(p.Detail, "reindex.") || strings.Contains(p.Detail, "float64") {
			t.Errorf("%s: %#v, want a problem naming %q without Go types", body, err, field)
		}
	}
	o, err := ParseOptions([]byte(`{"alias":"baedal_shops","shards":6}`), testAliases)
	if err != nil || o.Slices != "auto" || o.RequestsPerSecond != -1 || o.RefreshDuringCopy != "-1" || o.Replicas != -1 || o.Shards != 6 {
		t.Errorf("defaults not applied: %+v %v", o, err)
	}
}

func TestFlagErrorNamesFlags(t *testing.T) {
	o := DefaultOptions()
	o.Alias, o.ReplicasDuringCopy = "x", 10
	err := flagError(o.Validate(testAliases))
	for _, want := range []string{"--alias: got \"x\", allowed: baedal_shops_nested", "--replicas-during-copy: got 10, allowed: 0..8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func FuzzParseOptions(f *testing.F) {
	for _, seed := range []string{
		`{"alias":"baedal_shops","slices":"auto"}`,
		`{"alias":"baedal_menus","shards":6,"requests_per_second":100,"body":{"settings":{}}}`,
		`{"alias":1}`, `[]`, `{"body":"x"}`, `{"refresh_during_copy":"5s","replicas":-1}`, `{} {}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		o, err := ParseOptions(raw, testAliases)
		if err != nil {
			var p *api.Problem
			if !errors.As(err, &p) || p.Status != 400 || p.Field == "" {
				t.Fatalf("error is not a 400 problem naming a field: %#v", err)
			}
			return
		}
		if verr := o.Validate(testAliases); verr != nil {
			t.Fatalf("accepted options fail validation: %v", verr)
		}
	})
}

func FuzzParseTask(f *testing.F) {
	f.Add([]byte(runningTask))
	f.Add([]byte(failedTask))
	f.Add([]byte(`{"completed":true,"error":{"type":"x"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := parseTask(raw)
		if err != nil {
			return
		}
		if fr := s.Fraction(); fr < 0 || fr > 1 {
			t.Fatalf("fraction %v out of 0..1", fr)
		}
		if s.ETA() < 0 {
			t.Fatalf("negative ETA %s", s.ETA())
		}
	})
}

// TestCanonicalHashIgnoresKeyOrderNotValues: the copy keeps the indexer's
// bytes, a replay re-encodes them; only a change of a value may change the
// checksum.
func TestCanonicalHashIgnoresKeyOrderNotValues(t *testing.T) {
	a, err := CanonicalHash([]byte(`{"id":7,"name":"Kimbap","menus":[{"p":1.50,"n":"a"}],"version":3}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := CanonicalHash([]byte(` { "version":3, "menus":[{"n":"a","p":1.50}], "name":"Kimbap", "id":7 }`))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("same document in another key order hashes %x and %x", a, b)
	}
	for _, changed := range []string{
		`{"id":7,"name":"Kimbap!","menus":[{"p":1.50,"n":"a"}],"version":3}`,
		`{"id":7,"name":"Kimbap","menus":[{"p":1.5,"n":"a"}],"version":3}`, // number as written
		`{"id":7,"name":"Kimbap","menus":[],"version":3}`,
	} {
		c, err := CanonicalHash([]byte(changed))
		if err != nil {
			t.Fatal(err)
		}
		if c == a {
			t.Errorf("%s hashes like the original", changed)
		}
	}
	if _, err := CanonicalHash([]byte(`{"id":`)); err == nil {
		t.Error("a truncated _source hashed without an error")
	}
}

// TestCompareSums covers every kind of difference and sorts ids numerically.
func TestCompareSums(t *testing.T) {
	source := map[string]DocSum{"1": {3, 10}, "2": {4, 20}, "10": {5, 30}, "11": {6, 40}, "12": {2, 50}}
	target := map[string]DocSum{"1": {3, 10}, "2": {5, 21}, "10": {5, 31}, "12": {2, 50}, "9": {8, 90}}
	got := CompareSums(source, target)
	want := []Mismatch{
		{ID: "2", Reason: ReasonVersion, SourceVersion: 4, TargetVersion: 5, SourceHash: "14", TargetHash: "15"},
		{ID: "9", Reason: ReasonOnlyInTarget, TargetVersion: 8, TargetHash: "5a"},
		{ID: "10", Reason: ReasonContent, SourceVersion: 5, TargetVersion: 5, SourceHash: "1e", TargetHash: "1f"},
		{ID: "11", Reason: ReasonMissingInTarget, SourceVersion: 6, SourceHash: "28"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CompareSums:\n got %+v\nwant %+v", got, want)
	}
	if d := CompareSums(source, source); len(d) != 0 {
		t.Errorf("an index compared with itself differs: %v", d)
	}
}

// TestReached compares positions partition by partition.
func TestReached(t *testing.T) {
	cases := []struct {
		have, want []string
		ok         bool
	}{
		{[]string{"5-0", "7-1"}, []string{"5-0", "7-0"}, true},
		{[]string{"5-0", "6-9"}, []string{"5-0", "7-0"}, false},
		{[]string{"0-0"}, []string{"0-0"}, true},
		{[]string{"x"}, []string{"0-0"}, false},
	}
	for _, c := range cases {
		if got := reached(c.have, c.want); got != c.ok {
			t.Errorf("reached(%v, %v) = %v, want %v", c.have, c.want, got, c.ok)
		}
	}
}

// Two writes of the same hot head tombstone differ only in deleted_at (when
// each writer wrote it): they hash alike, and a live document's fields still
// count.
func TestCanonicalHashLeavesOutATombstonesDeletedAt(t *testing.T) {
	a, _ := CanonicalHash([]byte(`{"id":7,"version":3,"deleted":true,"deleted_at":"2026-11-28T01:00:00Z"}`))
	b, _ := CanonicalHash([]byte(`{"id":7,"version":3,"deleted":true,"deleted_at":"2026-11-28T02:00:00Z"}`))
	if a != b {
		t.Errorf("tombstones differing only in deleted_at hash %x and %x", a, b)
	}
	c, _ := CanonicalHash([]byte(`{"id":7,"version":3,"deleted":false,"deleted_at":"2026-11-28T02:00:00Z"}`))
	d, _ := CanonicalHash([]byte(`{"id":7,"version":3,"deleted":false,"deleted_at":"2026-11-28T01:00:00Z"}`))
	if c == d {
		t.Error("a document that is not a tombstone must keep every field in its hash")
	}
}
