package feed

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func TestIDGeneratorIsMonotonicAndEncodesTime(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := at
	g := NewIDGenerator(func() time.Time { return clock })
	prev := int64(0)
	for i := 0; i < 10_000; i++ { // more than 4096 in one millisecond
		if i == 5000 {
			clock = at.Add(-time.Second) // the clock steps back
		}
		id := g.Next()
		if id <= prev {
			t.Fatalf("id %d after %d: not increasing (i=%d)", id, prev, i)
		}
		if id > MaxPostID || float64(id) != float64(int64(float64(id))) || int64(float64(id)) != id {
			t.Fatalf("id %d does not survive float64", id)
		}
		prev = id
	}
	first := NewIDGenerator(func() time.Time { return at }).Next()
	if got := PostTime(first); !got.Equal(at) {
		t.Errorf("PostTime = %s, want %s", got, at)
	}
	// 2026-03-01T12:00:00Z is 424 days and 12 hours = 36,676,800,000 ms after 2025-01-01.
	if ms := first >> 12; ms != 36_676_800_000 {
		t.Errorf("id's millisecond part = %d, want 36676800000", ms)
	}
	if a, b := PostIDAt(at, 1), PostIDAt(at.Add(time.Millisecond), 0); a >= b {
		t.Errorf("PostIDAt does not order by time: %d >= %d", a, b)
	}
}

func TestMergeNewest(t *testing.T) {
	cases := []struct {
		lists [][]int64
		limit int
		want  []int64
	}{
		{nil, 5, []int64{}},
		{[][]int64{{9, 5, 1}}, 2, []int64{9, 5}},
		{[][]int64{{9, 5, 1}, {8, 6, 2}, {}, {7}}, 5, []int64{9, 8, 7, 6, 5}},
		{[][]int64{{9, 5}, {9, 4}, {5}}, 10, []int64{9, 5, 4}}, // duplicates once
		{[][]int64{{3}, {2}, {1}}, 10, []int64{3, 2, 1}},
	}
	for _, c := range cases {
		if got := mergeNewest(c.lists, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("mergeNewest(%v, %d) = %v, want %v", c.lists, c.limit, got, c.want)
		}
	}
}

func TestParseMigrations(t *testing.T) {
	ok := fstest.MapFS{
		"0002_more.sql": {Data: []byte("SELECT 2")},
		"0001_init.sql": {Data: []byte("SELECT 1")},
	}
	ms, err := parseMigrations(ok)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 1 || ms[0].Name != "init" || ms[1].SQL != "SELECT 2" {
		t.Errorf("parsed %+v", ms)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"0001_a.sql": {}, "0003_c.sql": {}},
		"duplicate": {"0001_a.sql": {}, "0001_b.sql": {}},
		"bad name":  {"1_a.sql": {}},
		"not one":   {"0002_a.sql": {}},
	} {
		if _, err := parseMigrations(fsys); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	embedded, err := Migrations()
	if err != nil || len(embedded) == 0 {
		t.Fatalf("embedded migrations: %d, %v", len(embedded), err)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	base := Defaults()
	if err := base.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	cases := []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Strategy = "fanout" }, "allowed: pull, push, hybrid"},
		{func(c *Config) { c.CelebrityThreshold = -1 }, "feed-celebrity-threshold: got -1"},
		{func(c *Config) { c.TimelineCap = 5 }, "feed-timeline-cap: got 5, allowed: 10..100000"},
		{func(c *Config) { c.KeyPrefix = "a b" }, "feed-key-prefix"},
		{func(c *Config) { c.ClaimMinIdle = c.ReadBlock }, "feed-claim-min-idle"},
		{func(c *Config) { c.PostCacheEntries = -2 }, "feed-post-cache: got -2, allowed: -1..10000000"},
		{func(c *Config) { c.ReadBatch = -2 }, "feed-read-batch: got -2, allowed: -1 (each read alone) or 1..1024"},
		{func(c *Config) { c.ReadBatch = 1025 }, "feed-read-batch: got 1025"},
		{func(c *Config) { c.ReadBatchesInFlight = 65 }, "feed-read-batches-in-flight: got 65, allowed: 1..64"},
	}
	for _, c := range cases {
		cfg := Defaults()
		c.mutate(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, c.want)
		}
	}
	var zero Config
	zero.EnsureDefaults()
	if zero != Defaults() {
		t.Errorf("EnsureDefaults on the zero value = %+v, want the defaults", zero)
	}
}

func TestValidateText(t *testing.T) {
	if err := ValidateText("안녕하세요", 5); err != nil {
		t.Errorf("5 Hangul characters with a limit of 5: %v", err)
	}
	for _, bad := range []string{"", "   ", "123456", "\xff"} {
		err := ValidateText(bad, 5)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "text" {
			t.Errorf("ValidateText(%q) = %v, want an InvalidError about text", bad, err)
		}
	}
}

// profilePic's cap counts characters, as api/openapi.json's maxLength does:
// 512 Hangul characters (1536 bytes) fit, 513 do not.
func TestProfilePicCapCountsCharacters(t *testing.T) {
	url := "https://img.example/" + strings.Repeat("가", 512-len("https://img.example/"))
	if err := validateProfilePic(url); err != nil {
		t.Errorf("a URL of 512 characters (%d bytes): %v", len(url), err)
	}
	var inv *InvalidError
	if err := validateProfilePic(url + "가"); !errors.As(err, &inv) || inv.Field != "profilePic" {
		t.Errorf("a URL of 513 characters: %v, want an InvalidError about profilePic", err)
	}
	if err := validateProfilePic(SeedPicturePrefix + "1.png"); !errors.As(err, &inv) || inv.Field != "profilePic" {
		t.Errorf("a picture under the seed's prefix: %v, want a field error naming profilePic (Seed would replace the user)", err)
	}
}
