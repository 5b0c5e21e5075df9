package reindex

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/layout"
)

// Config is the orchestrator's configuration. Layout and Log are shared with
// the indexer; Flags binds only the orchestrator's own fields.
type Config struct {
	Layout layout.Config
	Log    eventlog.Config
	// StatePrefix is put before every Redis key of the job state.
	StatePrefix string
	// PollEvery is how often a running copy task is polled.
	PollEvery time.Duration
	// GreenTimeout bounds the wait for the target to become green.
	GreenTimeout time.Duration
	// CatchUpBatch is how many log entries one catch-up Apply carries.
	CatchUpBatch int
	// FreezeBelow: catch-up passes repeat until one replays fewer events
	// than this; then the dual-write swap begins. (The name is the flag's,
	// from when the swap froze writes; it no longer does.)
	FreezeBelow int
	// MaxCatchUpPasses bounds the passes before the dual-write swap (the log
	// may grow faster than a pass replays it; the dual-write follows it).
	MaxCatchUpPasses int
	// VerifyRounds is how many times the documents that differ between
	// source and target are re-checked (after another catch-up pass) before
	// the job refuses to swap.
	VerifyRounds int
	// VerifyWait bounds, per re-check, the wait for the live indexer to
	// acknowledge every entry the catch-up replayed.
	VerifyWait time.Duration
	// DualWriteTimeout bounds the dual-write phase's waits for the catch-up
	// to reach the log's end before and after the swap.
	DualWriteTimeout time.Duration
	// LeaseTTL: one orchestrator runs a job at a time, under a lease it
	// renews every LeaseTTL/3. A killed orchestrator's lease expires after it.
	LeaseTTL time.Duration
	// PauseRequestsPerSecond is the copy rate of a paused job.
	PauseRequestsPerSecond float64
}

// Defaults returns polling every second, 10 minutes for green, catch-up
// batches of 1,000, dual-write below 2,000 events, 20 passes, 5 verification
// re-checks waiting up to 10 s each, 2 minutes of dual-write, a 15 s lease.
func Defaults() Config {
	return Config{
		Layout: layout.Defaults(), Log: eventlog.Defaults(),
		StatePrefix: "baedal:reindex:", PollEvery: time.Second, GreenTimeout: 10 * time.Minute,
		CatchUpBatch: 1000, FreezeBelow: 2000, MaxCatchUpPasses: 20, LeaseTTL: 15 * time.Second,
		VerifyRounds: 5, VerifyWait: 10 * time.Second, DualWriteTimeout: 2 * time.Minute,
		PauseRequestsPerSecond: 0.001,
	}
}

// Flags binds the orchestrator's own fields (not Layout and Log).
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.StatePrefix, "reindex-state-prefix", c.StatePrefix, "prefix of the reindex jobs' Redis keys")
	fs.DurationVar(&c.PollEvery, "reindex-poll", c.PollEvery, "how often the copy task is polled")
	fs.DurationVar(&c.GreenTimeout, "reindex-green-timeout", c.GreenTimeout, "longest wait for the new index to become green")
	fs.IntVar(&c.CatchUpBatch, "reindex-catchup-batch", c.CatchUpBatch, "log entries per catch-up batch")
	fs.IntVar(&c.FreezeBelow, "reindex-freeze-below", c.FreezeBelow, "start the dual-write swap once a catch-up pass replays fewer events than this (the swap no longer freezes writes)")
	fs.IntVar(&c.VerifyRounds, "reindex-verify-rounds", c.VerifyRounds, "re-checks of differing documents before a reindex refuses to swap")
	fs.DurationVar(&c.LeaseTTL, "reindex-lease", c.LeaseTTL, "lease of the orchestrator running a job")
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	var errs []error
	if c.StatePrefix == "" {
		errs = append(errs, errors.New("reindex-state-prefix: must not be empty"))
	}
	if c.PollEvery < 10*time.Millisecond || c.PollEvery > time.Minute {
		errs = append(errs, fmt.Errorf("reindex-poll: got %s, allowed: 10ms..1m", c.PollEvery))
	}
	if c.GreenTimeout < time.Second {
		errs = append(errs, fmt.Errorf("reindex-green-timeout: got %s, allowed: >= 1s", c.GreenTimeout))
	}
	if c.CatchUpBatch < 1 || c.CatchUpBatch > 100_000 {
		errs = append(errs, fmt.Errorf("reindex-catchup-batch: got %d, allowed: 1..100000", c.CatchUpBatch))
	}
	if c.FreezeBelow < 1 {
		errs = append(errs, fmt.Errorf("reindex-freeze-below: got %d, allowed: >= 1", c.FreezeBelow))
	}
	if c.MaxCatchUpPasses < 1 {
		errs = append(errs, fmt.Errorf("max catch-up passes: got %d, allowed: >= 1", c.MaxCatchUpPasses))
	}
	if c.VerifyRounds < 1 || c.VerifyRounds > 100 {
		errs = append(errs, fmt.Errorf("reindex-verify-rounds: got %d, allowed: 1..100", c.VerifyRounds))
	}
	if c.VerifyWait < 0 {
		errs = append(errs, fmt.Errorf("verify wait: got %s, allowed: >= 0", c.VerifyWait))
	}
	if c.DualWriteTimeout < time.Second {
		errs = append(errs, fmt.Errorf("dual-write timeout: got %s, allowed: >= 1s", c.DualWriteTimeout))
	}
	if c.LeaseTTL < time.Second || c.LeaseTTL > 10*time.Minute {
		errs = append(errs, fmt.Errorf("reindex-lease: got %s, allowed: 1s..10m", c.LeaseTTL))
	}
	if !(c.PauseRequestsPerSecond > 0) {
		errs = append(errs, fmt.Errorf("pause requests per second: got %v, allowed: > 0", c.PauseRequestsPerSecond))
	}
	errs = append(errs, c.Layout.Validate(), c.Log.Validate())
	return errors.Join(errs...)
}

// Options say what a job changes and how it copies. The zero values of
// Shards, Replicas and RefreshInterval keep the source's.
type Options struct {
	// Alias is the alias to rebuild: <prefix>shops_nested, <prefix>shops,
	// <prefix>menus, <prefix>hot_shops or <prefix>hot_menus.
	Alias string `json:"alias"`
	// Body is the new index body (settings, mappings); empty = the layout's
	// current body for the role. It must not carry aliases.
	Body json.RawMessage `json:"body,omitempty"`
	// Shards of the new index; 0 = from Body, else the source's.
	Shards int `json:"shards,omitempty"`
	// Replicas after the copy; -1 = the layout's configured setting for the
	// role (--nested-replicas etc., by default auto-expanding 0-1: one
	// replica once the cluster has two data nodes).
	Replicas int `json:"replicas"`
	// RefreshInterval after the copy; "" = the source's.
	RefreshInterval string `json:"refresh_interval,omitempty"`
	// Slices is "auto" (one per source shard) or a number 1..64.
	Slices string `json:"slices"`
	// RequestsPerSecond throttles the copy; -1 = unthrottled.
	RequestsPerSecond float64 `json:"requests_per_second"`
	// ReplicasDuringCopy and RefreshDuringCopy are the target's settings
	// while the copy runs.
	ReplicasDuringCopy int    `json:"replicas_during_copy"`
	RefreshDuringCopy  string `json:"refresh_during_copy"`
	// BatchSize is the copy's scroll and bulk size.
	BatchSize int `json:"batch_size"`
}

// DefaultOptions returns slices auto, unthrottled, no replica and no refresh
// during the copy, batches of 1,000, replicas as configured for the layout and
// refresh as the source's.
func DefaultOptions() Options {
	return Options{Replicas: -1, Slices: "auto", RequestsPerSecond: -1, ReplicasDuringCopy: 0, RefreshDuringCopy: "-1", BatchSize: 1000}
}

// Flags binds the options to the flags of `baedal reindex start`.
// --body-file is bound by the caller (it reads a file).
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.Alias, "alias", o.Alias, "alias to rebuild, e.g. baedal_shops_nested")
	fs.IntVar(&o.Shards, "shards", o.Shards, "primary shards of the new index (0 = the body's, else the source's)")
	fs.IntVar(&o.Replicas, "replicas", o.Replicas, "replicas of the new index after the copy (-1 = the layout's configured setting, by default 0-1)")
	fs.StringVar(&o.RefreshInterval, "refresh-interval", o.RefreshInterval, "refresh interval after the copy (empty = the source's)")
	fs.StringVar(&o.Slices, "slices", o.Slices, "parallel copy slices: auto (one per source shard) or 1..64")
	fs.Float64Var(&o.RequestsPerSecond, "requests-per-second", o.RequestsPerSecond, "copy throttle in documents per second; -1 = unthrottled")
	fs.IntVar(&o.ReplicasDuringCopy, "replicas-during-copy", o.ReplicasDuringCopy, "replicas of the new index while copying (0..8)")
	fs.StringVar(&o.RefreshDuringCopy, "refresh-during-copy", o.RefreshDuringCopy, "refresh interval while copying; -1 = none")
	fs.IntVar(&o.BatchSize, "batch-size", o.BatchSize, "documents per copy batch (scroll size), 1..10000")
}

// FieldError is an invalid option: the field (flag and JSON name), what is
// wrong, and the allowed values.
type FieldError struct {
	Field   string
	Problem string
	Allowed string
}

func (e *FieldError) Error() string {
	return e.Field + ": " + e.Problem + ", allowed: " + e.Allowed
}

func fieldErr(field, allowed, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...), Allowed: allowed}
}

// Validate returns every invalid field (FieldErrors, joined); aliases lists
// the aliases a job may rebuild.
func (o *Options) Validate(aliases []string) error {
	var errs []error
	if !slices.Contains(aliases, o.Alias) {
		errs = append(errs, fieldErr("alias", strings.Join(aliases, ", "), "got %q", o.Alias))
	}
	if len(o.Body) > 0 {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(o.Body, &body); err != nil || body == nil {
			errs = append(errs, fieldErr("body", "a JSON object with settings and mappings", "not a JSON object"))
		} else {
			for k := range body {
				if k != "settings" && k != "mappings" {
					errs = append(errs, fieldErr("body", "settings, mappings", "key %q", k))
				}
			}
		}
	}
	if o.Shards < 0 || o.Shards > 64 {
		errs = append(errs, fieldErr("shards", "0 (keep) or 1..64", "got %d", o.Shards))
	}
	if o.Replicas < -1 || o.Replicas > 8 {
		errs = append(errs, fieldErr("replicas", "-1 (keep) or 0..8", "got %d", o.Replicas))
	}
	if o.RefreshInterval != "" && !validInterval(o.RefreshInterval) {
		errs = append(errs, fieldErr("refresh_interval", "empty (keep), -1 or a duration like 1s, 500ms", "got %q", o.RefreshInterval))
	}
	if _, err := ParseSlices(o.Slices); err != nil {
		errs = append(errs, err)
	}
	if o.RequestsPerSecond != -1 && !(o.RequestsPerSecond > 0 && o.RequestsPerSecond <= 1e9) {
		errs = append(errs, fieldErr("requests_per_second", "-1 (unthrottled) or > 0", "got %v", o.RequestsPerSecond))
	}
	if o.ReplicasDuringCopy < 0 || o.ReplicasDuringCopy > 8 {
		errs = append(errs, fieldErr("replicas_during_copy", "0..8", "got %d", o.ReplicasDuringCopy))
	}
	if !validInterval(o.RefreshDuringCopy) {
		errs = append(errs, fieldErr("refresh_during_copy", "-1 or a duration like 1s, 30s", "got %q", o.RefreshDuringCopy))
	}
	if o.BatchSize < 1 || o.BatchSize > 10_000 {
		errs = append(errs, fieldErr("batch_size", "1..10000", "got %d", o.BatchSize))
	}
	return errors.Join(errs...)
}

// ParseSlices parses "auto" or a slice count 1..64; 0 means auto.
func ParseSlices(s string) (int, error) {
	if s == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 64 {
		return 0, fieldErr("slices", "auto or 1..64", "got %q", s)
	}
	return n, nil
}

// validInterval accepts OpenSearch time values: -1, or a number with a unit.
func validInterval(s string) bool {
	if s == "-1" {
		return true
	}
	for _, unit := range []string{"ms", "s", "m", "h", "d"} {
		if num, ok := strings.CutSuffix(s, unit); ok {
			n, err := strconv.ParseUint(num, 10, 32)
			return err == nil && n > 0
		}
	}
	return false
}

// formatRate formats requests_per_second for the query string.
func formatRate(rps float64) string {
	if rps < 0 || math.IsInf(rps, 1) {
		return "-1"
	}
	return strconv.FormatFloat(rps, 'f', -1, 64)
}
