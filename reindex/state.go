package reindex

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baedal/baedal/internal/redisscan"
	"github.com/redis/go-redis/v9"
)

// Step is where a job is. The forward steps run in this order; each is
// persisted once reached.
type Step string

// The steps.
const (
	StepPlanned     Step = "planned"      // start positions recorded
	StepCreated     Step = "created"      // target created with copy-time settings
	StepCopying     Step = "copying"      // copy task started, id persisted
	StepCopied      Step = "copied"       // copy task finished without failures
	StepRestored    Step = "restored"     // final replicas/refresh set, target green
	StepCaughtUp    Step = "caught_up"    // log replayed into the target up to a small lag
	StepVerified    Step = "verified"     // every document's checksum equal in source and target
	StepSwapped     Step = "swapped"      // alias on the target; post-swap pass pending
	StepDone        Step = "done"         // old index kept for rollback
	StepRollingBack Step = "rolling_back" // rollback in progress
	StepRolledBack  Step = "rolled_back"  // alias back on the source
	StepAborted     Step = "aborted"      // rolled back before the swap: target deleted
	StepFailed      Step = "failed"       // see Error; Run retries from FailedStep
	StepCleaned     Step = "cleaned"      // the index the alias left was deleted
)

// Spec is what a job does; it never changes after Start.
type Spec struct {
	ID       string  `json:"id"`
	Alias    string  `json:"alias"`
	Role     string  `json:"role"`
	Source   string  `json:"source"`
	Target   string  `json:"target"`
	Options  Options `json:"options"`
	Replicas int     `json:"final_replicas"`
	// ReplicaSetting is what restore sets: a count or an auto-expanding
	// range (layout.IndexSettings.Replicas). Jobs stored before it existed
	// have it empty and restore Replicas.
	ReplicaSetting string    `json:"final_replica_setting,omitempty"`
	Refresh        string    `json:"final_refresh_interval"`
	Partitions     int       `json:"partitions"`
	Created        time.Time `json:"created"`
}

// Status is a job as `status` shows it.
type Status struct {
	Spec
	Step       Step   `json:"step"`
	FailedStep Step   `json:"failed_step,omitempty"`
	Error      string `json:"error,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	Paused     bool   `json:"paused"`
	// Frozen names an index under the write freeze of an older version of
	// the swap (lifted on Run), if any; swaps no longer freeze.
	Frozen string `json:"frozen,omitempty"`
	// Phase is the last phase reached inside a step ("verifying",
	// "dual_write", "swap"), for status and tests.
	Phase string `json:"phase,omitempty"`
	// Verification before the swap: the documents compared (in the source
	// or the target when the scan ran; the live load creates and deletes
	// shops, so it is not the copy's total), those whose version and
	// content hash are equal in source and target, those that still
	// differed after the re-checks (the job then refuses to swap), and the
	// first of them. Compared = verified + mismatched + explained.
	ComparedDocs   int64 `json:"compared_docs"`
	VerifiedDocs   int64 `json:"verified_docs"`
	MismatchedDocs int64 `json:"mismatched_docs"`
	// ExplainedDocs differed after every re-check, each time explained by
	// an event newer than the catch-up position (shops updated all along).
	ExplainedDocs int64      `json:"explained_docs"`
	Mismatches    []Mismatch `json:"mismatches,omitempty"`
	// RequestsPerSecond is the copy rate set by start, rethrottle or resume.
	RequestsPerSecond float64    `json:"requests_per_second"`
	Copy              CopyStatus `json:"copy"`
	CopyPercent       float64    `json:"copy_percent"`
	CopyETASeconds    float64    `json:"copy_eta_seconds"`
	// CatchUp counts log entries replayed into the target (or, for a
	// rollback, into the source) and those the indexer could not apply.
	CatchUpEvents   int64 `json:"catchup_events"`
	CatchUpRejected int64 `json:"catchup_rejected"`
	// Timings of the steps, in seconds.
	CopySeconds         float64 `json:"copy_seconds,omitempty"`
	ReplicaBuildSeconds float64 `json:"replica_build_seconds,omitempty"`
	CatchUpSeconds      float64 `json:"catchup_seconds,omitempty"`
	VerifySeconds       float64 `json:"verify_seconds,omitempty"`
	// FreezeSeconds is how long writes to the old index were blocked: 0
	// since the dual-write swap (only jobs of older versions have more).
	FreezeSeconds float64 `json:"freeze_seconds"`
	// DualWriteSeconds is how long the dual-write phase of the swap ran
	// (the catch-up following the log while the live indexer writes).
	DualWriteSeconds float64 `json:"dual_write_seconds,omitempty"`
	// SwapLagSeconds is how long before the alias request the catch-up had
	// last been seen at the log's end (it bounds the residual window of the
	// package doc).
	SwapLagSeconds float64 `json:"swap_lag_seconds,omitempty"`
	// StepTimes maps a step to when it was reached.
	StepTimes map[Step]time.Time `json:"step_times,omitempty"`
}

// store keeps jobs in Redis: one hash per job, a set of job ids, a lock per
// alias (one unfinished job per alias) and a lease per job (one orchestrator).
//
// Every key starts with the hash tag {<prefix>}, so all of them share one
// slot on a Redis Cluster: create's MULTI/EXEC (the job hash and the set of
// ids) stays one transaction, and any later command over several of them
// would too. The state is a few small keys per job, so one slot costs
// nothing. Before the tag the keys were <prefix>job:<id> and so on;
// migrateLegacyKeys renames them on a single Redis.
type store struct {
	rdb    redis.UniversalClient
	prefix string
}

func (s *store) tag() string                 { return "{" + s.prefix + "}" }
func (s *store) jobKey(id string) string     { return s.tag() + "job:" + id }
func (s *store) jobsKey() string             { return s.tag() + "jobs" }
func (s *store) lockKey(alias string) string { return s.tag() + "active:" + alias }
func (s *store) leaseKey(id string) string   { return s.tag() + "lease:" + id }

// migrateLegacyKeys renames the keys of a single Redis written before the
// hash tag (<prefix>job:<id>, <prefix>jobs, <prefix>active:<alias>,
// <prefix>lease:<id>) to today's names, unless the new name exists
// (RENAMENX keeps the value and the TTL). It returns how many it renamed.
// On a Redis Cluster it does nothing: a cluster never held the legacy keys
// (create's MULTI over them spans slots).
func (s *store) migrateLegacyKeys(ctx context.Context) (int, error) {
	if _, ok := s.rdb.(*redis.ClusterClient); ok {
		return 0, nil
	}
	// Every legacy job is in the legacy set of ids, which the migration
	// renames: without it there is nothing to move, and the SCANs below
	// (a walk of the whole keyspace) are skipped at every later start.
	n, err := s.rdb.Exists(ctx, s.prefix+"jobs").Result()
	if err != nil {
		return 0, fmt.Errorf("reindex: look for legacy state %sjobs: %w", s.prefix, err)
	}
	if n == 0 {
		return 0, nil
	}
	var legacy []string
	for _, pattern := range []string{"job:*", "jobs", "active:*", "lease:*"} {
		iter := s.rdb.Scan(ctx, 0, redisscan.EscapeGlob(s.prefix)+pattern, 1000).Iterator()
		for iter.Next(ctx) {
			legacy = append(legacy, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return 0, fmt.Errorf("reindex: SCAN legacy state keys %s%s: %w", s.prefix, pattern, err)
		}
	}
	renamed := 0
	for _, key := range legacy {
		ok, err := s.rdb.RenameNX(ctx, key, s.tag()+strings.TrimPrefix(key, s.prefix)).Result()
		if err != nil && !strings.Contains(err.Error(), "no such key") {
			return renamed, fmt.Errorf("reindex: RENAMENX %s: %w", key, err)
		}
		if ok {
			renamed++
		}
	}
	return renamed, nil
}

// Hash fields of a job.
const (
	fSpec       = "spec"
	fStep       = "step"
	fFailedStep = "failed_step"
	fError      = "error"
	fTask       = "task"
	fPaused     = "paused"
	fRPS        = "rps"
	fCopy       = "copy"
	fCatchUp    = "catchup_events"
	fRejected   = "catchup_rejected"
	fStart      = "positions:start" // JSON []string: replay after these ids
	fSwap       = "positions:swap"  // JSON []string: the final pass's end
	fBackStart  = "positions:back"  // JSON []string: the live group's frontier right before the swap
	fFrozen     = "frozen"          // the index under an older version's write freeze, if any
	fPhase      = "phase"           // the last phase reached inside a step
	fCompared   = "compared_docs"
	fVerified   = "verified_docs"
	fMismatched = "mismatched_docs"
	fExplained  = "explained_docs"
	fMismatches = "mismatches"  // JSON []Mismatch, at most maxReportedMismatches
	fTargetUUID = "target_uuid" // index.uuid of the target this job created
	fTimings    = "timing:"     // + name: seconds
	fStepAt     = "at:"         // + step: RFC 3339
	fCursor     = "cursor:"     // + phase + ":" + partition
)

// ErrNotFound is returned for an unknown job id.
var ErrNotFound = errors.New("reindex: job not found")

// ErrBusy is returned when the alias already has an unfinished job, or when
// another orchestrator holds a job's lease.
var ErrBusy = errors.New("reindex: busy")

// create stores a new job and takes the alias lock.
func (s *store) create(ctx context.Context, spec Spec, start []string) error {
	ok, err := s.rdb.SetNX(ctx, s.lockKey(spec.Alias), spec.ID, 0).Result()
	if err != nil {
		return fmt.Errorf("reindex: lock alias %s: %w", spec.Alias, err)
	}
	if !ok {
		other, _ := s.rdb.Get(ctx, s.lockKey(spec.Alias)).Result()
		return fmt.Errorf("%w: alias %s has the unfinished job %s (clean it up or roll it back first)", ErrBusy, spec.Alias, other)
	}
	rawSpec, _ := json.Marshal(spec)
	rawStart, _ := json.Marshal(start)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.jobKey(spec.ID), fSpec, rawSpec, fStep, string(StepPlanned), fStart, rawStart,
			fRPS, formatRate(spec.Options.RequestsPerSecond), fPaused, "0", fStepAt+string(StepPlanned), time.Now().UTC().Format(time.RFC3339Nano))
		p.SAdd(ctx, s.jobsKey(), spec.ID)
		return nil
	})
	if err != nil {
		s.rdb.Del(ctx, s.lockKey(spec.Alias))
		return fmt.Errorf("reindex: store job %s: %w", spec.ID, err)
	}
	return nil
}

func (s *store) releaseLock(ctx context.Context, alias, id string) error {
	held, err := s.rdb.Get(ctx, s.lockKey(alias)).Result()
	if errors.Is(err, redis.Nil) || (err == nil && held != id) {
		return nil
	}
	if err == nil {
		err = s.rdb.Del(ctx, s.lockKey(alias)).Err()
	}
	if err != nil {
		return fmt.Errorf("reindex: release lock of %s: %w", alias, err)
	}
	return nil
}

func (s *store) fields(ctx context.Context, id string) (map[string]string, error) {
	m, err := s.rdb.HGetAll(ctx, s.jobKey(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("reindex: load job %s: %w", id, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return m, nil
}

// load returns a job's status.
func (s *store) load(ctx context.Context, id string) (Status, map[string]string, error) {
	m, err := s.fields(ctx, id)
	if err != nil {
		return Status{}, nil, err
	}
	var st Status
	if err := json.Unmarshal([]byte(m[fSpec]), &st.Spec); err != nil {
		return Status{}, nil, fmt.Errorf("reindex: job %s: decode spec: %w", id, err)
	}
	st.Step, st.FailedStep, st.Error, st.TaskID = Step(m[fStep]), Step(m[fFailedStep]), m[fError], m[fTask]
	st.Paused, st.Frozen, st.Phase = m[fPaused] == "1", m[fFrozen], m[fPhase]
	st.ComparedDocs, _ = strconv.ParseInt(m[fCompared], 10, 64)
	st.VerifiedDocs, _ = strconv.ParseInt(m[fVerified], 10, 64)
	st.MismatchedDocs, _ = strconv.ParseInt(m[fMismatched], 10, 64)
	st.ExplainedDocs, _ = strconv.ParseInt(m[fExplained], 10, 64)
	if raw := m[fMismatches]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &st.Mismatches)
	}
	st.RequestsPerSecond, _ = strconv.ParseFloat(m[fRPS], 64)
	if raw := m[fCopy]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &st.Copy)
	}
	st.CopyPercent = 100 * st.Copy.Fraction()
	st.CopyETASeconds = st.Copy.ETA().Seconds()
	st.CatchUpEvents, _ = strconv.ParseInt(m[fCatchUp], 10, 64)
	st.CatchUpRejected, _ = strconv.ParseInt(m[fRejected], 10, 64)
	timing := func(name string) float64 {
		v, _ := strconv.ParseFloat(m[fTimings+name], 64)
		return v
	}
	st.CopySeconds, st.ReplicaBuildSeconds = timing("copy"), timing("replica_build")
	st.CatchUpSeconds, st.FreezeSeconds = timing("catchup"), timing("freeze")
	st.VerifySeconds, st.DualWriteSeconds, st.SwapLagSeconds = timing("verify"), timing("dual_write"), timing("swap_lag")
	st.StepTimes = map[Step]time.Time{}
	for k, v := range m {
		if step, ok := strings.CutPrefix(k, fStepAt); ok {
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				st.StepTimes[Step(step)] = t
			}
		}
	}
	return st, m, nil
}

// setStep persists a step (and clears a previous failure).
func (s *store) setStep(ctx context.Context, id string, step Step, extra ...any) error {
	args := append([]any{fStep, string(step), fStepAt + string(step), time.Now().UTC().Format(time.RFC3339Nano)}, extra...)
	if err := s.rdb.HSet(ctx, s.jobKey(id), args...).Err(); err != nil {
		return fmt.Errorf("reindex: job %s: persist step %s: %w", id, step, err)
	}
	return nil
}

func (s *store) set(ctx context.Context, id string, fieldValues ...any) error {
	if err := s.rdb.HSet(ctx, s.jobKey(id), fieldValues...).Err(); err != nil {
		return fmt.Errorf("reindex: job %s: persist %v: %w", id, fieldValues[0], err)
	}
	return nil
}

func (s *store) addCount(ctx context.Context, id, field string, n int64) error {
	if n == 0 {
		return nil
	}
	if err := s.rdb.HIncrBy(ctx, s.jobKey(id), field, n).Err(); err != nil {
		return fmt.Errorf("reindex: job %s: count %s: %w", id, field, err)
	}
	return nil
}

func (s *store) list(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, s.jobsKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("reindex: list jobs: %w", err)
	}
	return ids, nil
}

// lease is one orchestrator's exclusive right to run a job.
type lease struct {
	s     *store
	id    string
	owner string
	ttl   time.Duration
}

// acquireLease takes the job's lease, waiting up to wait for an expired
// holder (a killed orchestrator) to let go.
func (s *store) acquireLease(ctx context.Context, id string, ttl, wait time.Duration) (*lease, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	l := &lease{s: s, id: id, owner: hex.EncodeToString(b), ttl: ttl}
	deadline := time.Now().Add(wait)
	for {
		ok, err := s.rdb.SetNX(ctx, s.leaseKey(id), l.owner, ttl).Result()
		if err != nil {
			return nil, fmt.Errorf("reindex: lease of job %s: %w", id, err)
		}
		if ok {
			return l, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: job %s is being run by another orchestrator (its lease expires within %s)", ErrBusy, id, ttl)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// renewScript extends the lease only if this owner still holds it.
var renewScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`)

var releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)

// keep renews the lease until ctx ends; it calls lost when the lease is gone.
func (l *lease) keep(ctx context.Context, lost func()) {
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := renewScript.Run(ctx, l.s.rdb, []string{l.s.leaseKey(l.id)}, l.owner, l.ttl.Milliseconds()).Int()
		if err == nil && n == 0 {
			lost()
			return
		}
	}
}

func (l *lease) release(ctx context.Context) {
	_ = releaseScript.Run(ctx, l.s.rdb, []string{l.s.leaseKey(l.id)}, l.owner).Err()
}
