package reindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// Orchestrator starts, runs, inspects and controls reindex jobs. Several
// orchestrators (processes) may share the state; a job runs in one at a time.
type Orchestrator struct {
	cfg   Config
	os    *osapi.Client
	rdb   redis.UniversalClient
	evlog *eventlog.Log
	store *store
	log   *slog.Logger
	m     *metrics
	// OnProgress, if set, is called after every poll of a running copy.
	OnProgress func(Status)
	// OnPhase, if set, is called (synchronously) when a job reaches a phase
	// inside a step: "copy_started" (the copy task is running),
	// "copy_finished" (it ended without failures), "verifying" (before the
	// checksum scan), "dual_write" (the catch-up follows the log, the alias
	// is still on the old index) and "swapped" (the alias moved, the
	// dual-write still runs). The kill test stops the orchestrator there;
	// the benchmark reads the nodes' counters around the copy.
	OnPhase func(job, phase string)
}

// phase records that a job reached a phase inside a step.
func (o *Orchestrator) phase(id, name string) {
	_ = o.store.set(context.Background(), id, fPhase, name)
	o.log.Info("reindex phase", "job", id, "phase", name)
	if o.OnPhase != nil {
		o.OnPhase(id, name)
	}
}

type metrics struct {
	steps    *prometheus.CounterVec
	copied   prometheus.Gauge
	catchUp  prometheus.Counter
	failures prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		steps:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baedal_reindex_steps_total", Help: "Reindex job steps reached."}, []string{"step"}),
		copied:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "baedal_reindex_copy_ratio", Help: "Share of the source the running copy has handled (0..1)."}),
		catchUp:  prometheus.NewCounter(prometheus.CounterOpts{Name: "baedal_reindex_catchup_events_total", Help: "Event-log entries replayed by reindex catch-up."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "baedal_reindex_failures_total", Help: "Reindex jobs that stopped on an error."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.steps, m.copied, m.catchUp, m.failures} {
			if err := reg.Register(c); err != nil {
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					panic(err)
				}
			}
		}
	}
	return m
}

// New returns an orchestrator. log and reg may be nil.
func New(cfg Config, os *osapi.Client, rdb redis.UniversalClient, log *slog.Logger, reg prometheus.Registerer) (*Orchestrator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os == nil || rdb == nil {
		return nil, errors.New("reindex: New needs an OpenSearch and a Redis client")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	evlog, err := eventlog.New(cfg.Log, rdb, log, nil)
	if err != nil {
		return nil, err
	}
	return &Orchestrator{
		cfg: cfg, os: os, rdb: rdb, evlog: evlog, store: &store{rdb: rdb, prefix: cfg.StatePrefix},
		log: log.With("component", "reindex"), m: newMetrics(reg),
	}, nil
}

// MigrateLegacyKeys renames the job state a single Redis holds under the
// keys from before their hash tag (see store); serve and the reindex command
// run it at start. It returns how many keys it renamed.
func (o *Orchestrator) MigrateLegacyKeys(ctx context.Context) (int, error) {
	return o.store.migrateLegacyKeys(ctx)
}

// Aliases returns the aliases a job may rebuild.
func (o *Orchestrator) Aliases() []string {
	out := append(o.cfg.Layout.Aliases(layout.Nested), o.cfg.Layout.Aliases(layout.Split)...)
	return append(out, o.cfg.Layout.Aliases(layout.Hot)...)
}

// Start plans a job: it checks the options, resolves the source behind the
// alias, names the target, records the replay start of every partition and
// persists the job (step planned). It does not copy; call Run.
func (o *Orchestrator) Start(ctx context.Context, opts Options) (Status, error) {
	if err := opts.Validate(o.Aliases()); err != nil {
		return Status{}, err
	}
	role := strings.TrimPrefix(opts.Alias, o.cfg.Layout.Prefix)
	source, err := aliasTarget(ctx, o.os, opts.Alias)
	if err != nil {
		return Status{}, err
	}
	target, _, err := nextGeneration(ctx, o.os, opts.Alias)
	if err != nil {
		return Status{}, err
	}
	src, err := getIndexSettings(ctx, o.os, source)
	if err != nil {
		return Status{}, err
	}
	spec := Spec{
		ID: target, Alias: opts.Alias, Role: role, Source: source, Target: target, Options: opts,
		Replicas: opts.Replicas, Refresh: opts.RefreshInterval, Partitions: o.cfg.Log.Partitions, Created: time.Now().UTC(),
	}
	if spec.Replicas < 0 {
		// The configured setting, not the source's count: a source created
		// with 0 replicas (or auto-expanded on one node) must not carry
		// that over to a cluster that can hold replicas.
		spec.Replicas, spec.ReplicaSetting = src.Replicas, o.cfg.Layout.Settings(role).Replicas
	} else if role == layout.RoleHotShops {
		return Status{}, fmt.Errorf("reindex: replicas: got %d for %s, allowed: the default (%s: every data node holds a copy of the shop-head index, and its hot table)", spec.Replicas, opts.Alias, layout.HotShopsReplicas)
	} else {
		spec.ReplicaSetting = strconv.Itoa(spec.Replicas)
	}
	if spec.Refresh == "" {
		spec.Refresh = src.RefreshInterval
	}
	if len(spec.Options.Body) == 0 {
		if spec.Options.Body, err = o.cfg.Layout.IndexBody(role); err != nil {
			return Status{}, err
		}
	}
	if spec.Options.Shards == 0 && !bodySetsShards(spec.Options.Body) {
		spec.Options.Shards = src.Shards
	}
	start, err := replayStart(ctx, o.evlog, kindOf(role))
	if err != nil {
		return Status{}, err
	}
	if err := o.store.create(ctx, spec, start); err != nil {
		return Status{}, err
	}
	o.m.steps.WithLabelValues(string(StepPlanned)).Inc()
	o.log.Info("reindex planned", "job", spec.ID, "alias", spec.Alias, "source", source, "target", target, "replay_after", start)
	st, _, err := o.store.load(ctx, spec.ID)
	return st, err
}

func bodySetsShards(body []byte) bool {
	var b struct {
		Settings map[string]json.RawMessage `json:"settings"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	if _, ok := b.Settings["number_of_shards"]; ok {
		return true
	}
	if _, ok := b.Settings["index.number_of_shards"]; ok {
		return true
	}
	var idx map[string]json.RawMessage
	if json.Unmarshal(b.Settings["index"], &idx) == nil {
		_, ok := idx["number_of_shards"]
		return ok
	}
	return false
}

// Status returns a job's state.
func (o *Orchestrator) Status(ctx context.Context, id string) (Status, error) {
	st, _, err := o.store.load(ctx, id)
	return st, err
}

// List returns every job, newest first.
func (o *Orchestrator) List(ctx context.Context) ([]Status, error) {
	ids, err := o.store.list(ctx)
	if err != nil {
		return nil, err
	}
	var out []Status
	for _, id := range ids {
		st, err := o.Status(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(s []Status) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].Created.After(s[j-1].Created); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// Run drives a job from its persisted step to done (or failed), under the
// job's lease. A job that failed is retried from the step that failed. Run
// returns nil when the job is done (or already finished).
func (o *Orchestrator) Run(ctx context.Context, id string) (err error) {
	l, err := o.store.acquireLease(ctx, id, o.cfg.LeaseTTL, o.cfg.LeaseTTL+2*time.Second)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go l.keep(ctx, func() { cancel(fmt.Errorf("%w: lost the lease of job %s", ErrBusy, id)) })
	defer l.release(context.WithoutCancel(ctx))

	st, fields, err := o.store.load(ctx, id)
	if err != nil {
		return err
	}
	if err := o.liftFreeze(ctx, st, fields); err != nil {
		return err
	}
	if st.Step == StepFailed && st.FailedStep != "" {
		o.log.Info("retrying failed job", "job", id, "step", st.FailedStep, "error", st.Error)
		if err := o.store.setStep(ctx, id, st.FailedStep, fError, ""); err != nil {
			return err
		}
	}
	for {
		st, fields, err := o.store.load(ctx, id)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		var next Step
		switch st.Step {
		case StepPlanned:
			next, err = o.create(ctx, st)
		case StepCreated:
			next, err = o.startCopy(ctx, st)
		case StepCopying:
			next, err = o.followCopy(ctx, st)
		case StepCopied:
			next, err = o.restore(ctx, st, fields)
		case StepRestored:
			next, err = o.catchUp(ctx, st, fields)
		case StepCaughtUp:
			next, err = o.verify(ctx, st, fields)
		case StepVerified:
			next, err = o.switchAlias(ctx, st, fields, st.Source, st.Target, "fwd", fStart, StepSwapped)
		case StepSwapped:
			next, err = o.afterSwap(ctx, st, fields, st.Target, "post", StepDone)
		case StepRollingBack:
			return o.rollbackAfterSwap(ctx, st, fields)
		default: // done, failed, rolled_back, aborted, cleaned
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("reindex: job %s stopped in step %s: %w", id, st.Step, context.Cause(ctx))
			}
			if now, _, lerr := o.store.load(ctx, id); lerr == nil && now.Step == StepAborted {
				return nil // rolled back (aborted) while copying
			}
			o.m.failures.Inc()
			o.log.Error("reindex step failed", "job", id, "step", st.Step, "err", err)
			_ = o.store.setStep(context.WithoutCancel(ctx), id, StepFailed, fFailedStep, string(st.Step), fError, err.Error())
			return fmt.Errorf("reindex: job %s, step %s: %w", id, st.Step, err)
		}
		if err := o.store.setStep(ctx, id, next); err != nil {
			return err
		}
		o.m.steps.WithLabelValues(string(next)).Inc()
		o.log.Info("reindex step", "job", id, "step", next)
	}
}

func (o *Orchestrator) create(ctx context.Context, st Status) (Step, error) {
	body, err := targetBody(st.Options.Body, st.Options.Shards, st.Options.ReplicasDuringCopy, st.Options.RefreshDuringCopy)
	if err != nil {
		return "", err
	}
	if err := createIndex(ctx, o.os, st.Target, body); err != nil {
		return "", err
	}
	uuid, err := indexUUID(ctx, o.os, st.Target)
	if err != nil {
		return "", err
	}
	if err := o.store.set(ctx, st.ID, fTargetUUID, uuid); err != nil {
		return "", err
	}
	return StepCreated, nil
}

func (o *Orchestrator) startCopy(ctx context.Context, st Status) (Step, error) {
	if ok, err := indexExists(ctx, o.os, st.Target); err != nil {
		return "", err
	} else if !ok {
		return "", fmt.Errorf("target index %s is missing; the alias stays on %s", st.Target, st.Source)
	}
	// A copy started just before a crash is still running: follow it.
	task, err := findCopyTask(ctx, o.os, st.Source, st.Target)
	if err != nil {
		return "", err
	}
	if task == "" {
		// Everything acknowledged before the recorded replay start must be
		// visible to the copy's scroll.
		if err := refresh(ctx, o.os, st.Source); err != nil {
			return "", err
		}
		opts := st.Options
		if st.Paused {
			opts.RequestsPerSecond = o.cfg.PauseRequestsPerSecond
		}
		if task, err = startCopy(ctx, o.os, st.Source, st.Target, opts); err != nil {
			return "", err
		}
	}
	o.log.Info("copy task", "job", st.ID, "task", task, "slices", st.Options.Slices, "requests_per_second", formatRate(st.Options.RequestsPerSecond))
	if err := o.store.set(ctx, st.ID, fTask, task, fStepAt+"copy_started", time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return "", err
	}
	o.phase(st.ID, "copy_started")
	return StepCopying, nil
}

func (o *Orchestrator) followCopy(ctx context.Context, st Status) (Step, error) {
	for {
		cs, err := getTask(ctx, o.os, st.TaskID)
		if osapi.IsStatus(err, 404) {
			// The task is gone (its node restarted before it finished and its
			// result was not stored): copy again; external versions make the
			// second copy skip what the first wrote.
			o.log.Warn("copy task not found; starting the copy again", "job", st.ID, "task", st.TaskID)
			return StepCreated, nil
		}
		if err != nil {
			return "", err
		}
		raw, _ := json.Marshal(cs)
		if err := o.store.set(ctx, st.ID, fCopy, raw); err != nil {
			return "", err
		}
		o.m.copied.Set(cs.Fraction())
		if o.OnProgress != nil {
			if now, _, err := o.store.load(ctx, st.ID); err == nil {
				o.OnProgress(now)
			}
		}
		if cs.Completed {
			if cs.Error != "" || cs.Failures > 0 || cs.Cancelled {
				return "", fmt.Errorf("copy task %s failed: %d failures, error %q, samples %v; the alias stays on %s",
					st.TaskID, cs.Failures, cs.Error, cs.FailureSamples, st.Source)
			}
			secs := cs.RunningSeconds
			if err := o.store.set(ctx, st.ID, fTimings+"copy", strconv.FormatFloat(secs, 'f', 3, 64)); err != nil {
				return "", err
			}
			o.log.Info("copy done", "job", st.ID, "docs", cs.Done(), "created", cs.Created, "skipped_newer", cs.VersionConflicts, "seconds", secs)
			o.phase(st.ID, "copy_finished")
			return StepCopied, nil
		}
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-time.After(o.cfg.PollEvery):
		}
	}
}

// checkTarget makes sure the target is the index this job created: a target
// deleted during the copy is re-created by _reindex with dynamic mappings,
// and must never receive the alias.
func (o *Orchestrator) checkTarget(ctx context.Context, st Status, fields map[string]string) error {
	uuid, err := indexUUID(ctx, o.os, st.Target)
	if err != nil {
		return fmt.Errorf("target %s: %w; the alias stays on %s", st.Target, err, st.Source)
	}
	if want := fields[fTargetUUID]; uuid != want {
		return fmt.Errorf("target %s is not the index this job created (uuid %s, created %s): it was deleted and re-created during the copy; the alias stays on %s",
			st.Target, uuid, want, st.Source)
	}
	return nil
}

func (o *Orchestrator) restore(ctx context.Context, st Status, fields map[string]string) (Step, error) {
	if err := o.checkTarget(ctx, st, fields); err != nil {
		return "", err
	}
	start := time.Now()
	// Commit the copy before adding replicas. Peer recovery copies the
	// files of the primary's last commit and replays only the operations
	// after it; the copy ran with refresh off and stayed under the
	// translog's flush threshold, so without this commit the last one is
	// the empty index's and every replica re-indexes every document, which
	// costs what keeping the replicas during the copy would have.
	if err := flush(ctx, o.os, st.Target); err != nil {
		return "", err
	}
	settings := map[string]any{"number_of_replicas": st.Replicas, "auto_expand_replicas": "false"}
	if st.ReplicaSetting != "" {
		settings = layout.ReplicaSettings(st.ReplicaSetting)
	}
	settings["refresh_interval"] = st.Refresh
	if err := putSettings(ctx, o.os, st.Target, settings); err != nil {
		return "", err
	}
	if err := refresh(ctx, o.os, st.Target); err != nil {
		return "", err
	}
	if err := waitGreen(ctx, o.os, st.Target, o.cfg.GreenTimeout); err != nil {
		return "", err
	}
	secs := time.Since(start).Seconds()
	o.log.Info("target restored", "job", st.ID, "replicas", st.ReplicaSetting, "refresh_interval", st.Refresh, "replica_build_seconds", secs)
	if err := o.store.set(ctx, st.ID, fTimings+"replica_build", strconv.FormatFloat(secs, 'f', 3, 64)); err != nil {
		return "", err
	}
	return StepRestored, nil
}

func positions(fields map[string]string, key string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(fields[key]), &out); err != nil {
		return nil, fmt.Errorf("reindex: decode %s: %w", key, err)
	}
	return out, nil
}

// catchUp replays the log into the target in passes until a pass replays
// fewer than FreezeBelow entries (or MaxCatchUpPasses passes ran).
func (o *Orchestrator) catchUp(ctx context.Context, st Status, fields map[string]string) (Step, error) {
	from, err := positions(fields, fStart)
	if err != nil {
		return "", err
	}
	start := time.Now()
	if err := o.catchUpPasses(ctx, st, fields, st.Target, "fwd", from); err != nil {
		return "", err
	}
	if err := o.store.set(ctx, st.ID, fTimings+"catchup", strconv.FormatFloat(time.Since(start).Seconds(), 'f', 3, 64)); err != nil {
		return "", err
	}
	return StepCaughtUp, nil
}

func (o *Orchestrator) catchUpPasses(ctx context.Context, st Status, fields map[string]string, dest, phase string, from []string) error {
	r, err := o.newReplayer(ctx, st, dest, phase)
	if err != nil {
		return err
	}
	cursors := r.cursors(fields, from)
	for pass := 1; ; pass++ {
		n, err := r.pass(ctx, cursors)
		if err != nil {
			return err
		}
		o.log.Info("catch-up pass", "job", st.ID, "into", dest, "pass", pass, "events", n)
		if n < int64(o.cfg.FreezeBelow) || pass >= o.cfg.MaxCatchUpPasses {
			return nil
		}
	}
}

// switchAlias moves the alias from one index to another without freezing
// writes: catch-up passes into to (phase), then the dual-write: a tailer
// replays every entry appended to the log into to as it appears while the
// live indexer keeps writing from (through the alias); once the tailer
// stands at the log's end the alias moves in one request, and the tailer
// keeps following the log until it has passed the log's end as read after
// the swap (the live indexer then writes to). External versions keep the
// newer copy of every document whichever writer comes first. fromKey names
// the positions the phase starts after. A resumed call finds the alias
// already moved (the post-swap pass then starts at the positions persisted
// before the swap request) or starts the dual-write again.
func (o *Orchestrator) switchAlias(ctx context.Context, st Status, fields map[string]string, from, to, phase, fromKey string, next Step) (Step, error) {
	current, err := aliasTarget(ctx, o.os, st.Alias)
	if err != nil {
		return "", err
	}
	if current == to { // swapped just before a crash: afterSwap replays from fSwap
		return next, nil
	}
	if current != from {
		return "", fmt.Errorf("alias %s points at %s, neither %s nor %s: someone else moved it; not swapping", st.Alias, current, from, to)
	}
	if ok, err := indexExists(ctx, o.os, to); err != nil {
		return "", err
	} else if !ok {
		return "", fmt.Errorf("index %s is missing; the alias stays on %s", to, from)
	}
	if to == st.Target {
		if err := o.checkTarget(ctx, st, fields); err != nil {
			return "", err
		}
	}
	startPos, err := positions(fields, fromKey)
	if err != nil {
		return "", err
	}
	if err := o.catchUpPasses(ctx, st, fields, to, phase, startPos); err != nil {
		return "", err
	}
	if phase == "fwd" {
		// A rollback must replay into the source everything the live indexer
		// may have written only into the target: from its group's frontier
		// before the swap.
		back, err := replayStart(ctx, o.evlog, kindOf(st.Role))
		if err != nil {
			return "", err
		}
		raw, _ := json.Marshal(back)
		if err := o.store.set(ctx, st.ID, fBackStart, raw); err != nil {
			return "", err
		}
	}
	fields, err = o.store.fields(ctx, st.ID)
	if err != nil {
		return "", err
	}
	r, err := o.newReplayer(ctx, st, to, phase)
	if err != nil {
		return "", err
	}
	dualStart := time.Now()
	t := startTailer(ctx, r, r.cursors(fields, startPos))
	defer t.stop()
	o.phase(st.ID, "dual_write")

	// Swap only when the tailer stood at the log's end a moment ago, so
	// that only entries appended within milliseconds of the swap can be in
	// from and not yet in to.
	deadline := time.Now().Add(o.cfg.DualWriteTimeout)
	settleBy := time.Now().Add(dualWriteSettle)
	var lag time.Duration
	for {
		end, err := o.logEnds(ctx)
		if err != nil {
			return "", err
		}
		asked := time.Now()
		if err := t.waitFor(ctx, end, deadline); err != nil {
			return "", fmt.Errorf("dual-write into %s before the swap: %w; the alias stays on %s", to, err, from)
		}
		if lag = time.Since(asked); lag < swapReadyWithin || time.Now().After(settleBy) {
			break
		}
	}
	// Everything up to the tailer's position is in to; the post-swap pass
	// of a resumed job replays from there.
	rawSwap, _ := json.Marshal(t.position())
	if err := o.store.set(ctx, st.ID, fSwap, rawSwap); err != nil {
		return "", err
	}
	swapStart := time.Now()
	if err := swapAlias(ctx, o.os, st.Alias, from, to); err != nil {
		return "", err
	}
	swapTook := time.Since(swapStart)
	o.phase(st.ID, "swapped")
	// The live indexer wrote from until the swap, only entries appended
	// before it: follow the log to its end as read now.
	end, err := o.logEnds(ctx)
	if err != nil {
		return "", err
	}
	if err := t.waitFor(ctx, end, time.Now().Add(o.cfg.DualWriteTimeout)); err != nil {
		return "", fmt.Errorf("dual-write into %s after the swap: %w (the post-swap pass replays from the swap positions)", to, err)
	}
	final := t.stop()
	if err := t.err(); err != nil {
		return "", err
	}
	rawEnd, _ := json.Marshal(final)
	dual := time.Since(dualStart)
	o.log.Info("alias swapped without a write freeze", "job", st.ID, "alias", st.Alias, "from", from, "to", to,
		"swap_request_ms", swapTook.Milliseconds(), "catchup_lag_at_swap_ms", lag.Milliseconds(), "dual_write_ms", dual.Milliseconds())
	if err := o.store.set(ctx, st.ID, fSwap, rawEnd, fTimings+"freeze", "0", fTimings+"dual_write", strconv.FormatFloat(dual.Seconds(), 'f', 3, 64),
		fTimings+"swap_request", strconv.FormatFloat(swapTook.Seconds(), 'f', 3, 64), fTimings+"swap_lag", strconv.FormatFloat(lag.Seconds(), 'f', 3, 64)); err != nil {
		return "", err
	}
	return next, nil
}

// logEnds returns the id of every partition's last entry.
func (o *Orchestrator) logEnds(ctx context.Context) ([]string, error) {
	out := make([]string, o.cfg.Log.Partitions)
	for p := range out {
		end, err := lastEntryID(ctx, o.rdb, o.evlog.StreamKey(p))
		if err != nil {
			return nil, err
		}
		out[p] = end
	}
	return out, nil
}

// afterSwap replays from the swap positions to the log's end into the index
// the alias now points at, and drops the catch-up aliases.
func (o *Orchestrator) afterSwap(ctx context.Context, st Status, fields map[string]string, dest, phase string, next Step) (Step, error) {
	from, err := positions(fields, fSwap)
	if err != nil {
		return "", err
	}
	r, err := o.newReplayer(ctx, st, dest, phase)
	if err != nil {
		return "", err
	}
	n, err := r.pass(ctx, r.cursors(fields, from))
	if err != nil {
		return "", err
	}
	o.log.Info("post-swap catch-up", "job", st.ID, "into", dest, "events", n)
	if dest == st.Target {
		// The catch-up wrote with a request translog; from now on only the
		// live indexer writes, and it waits for a flush before it
		// acknowledges when the translog is async.
		d, err := finalDurability(st.Options.Body)
		if err != nil {
			return "", err
		}
		if d != "" && d != layout.DurabilityRequest {
			if err := putSettings(ctx, o.os, dest, map[string]any{"translog.durability": d}); err != nil {
				return "", err
			}
		}
	}
	if err := removeAliases(ctx, o.os, o.catchUpAliases(st, dest)); err != nil {
		return "", err
	}
	return next, nil
}

func (o *Orchestrator) taskID(ctx context.Context, id string) (Status, error) {
	st, err := o.Status(ctx, id)
	if err != nil {
		return st, err
	}
	if st.TaskID == "" || (st.Step != StepCopying && st.Step != StepCreated && !(st.Step == StepFailed && st.FailedStep == StepCopying)) {
		return st, fmt.Errorf("%w: job %s is in step %s; pause, resume and rethrottle act on a running copy", ErrWrongStep, id, st.Step)
	}
	return st, nil
}

// ErrWrongStep is returned for an action the job's step does not allow.
var ErrWrongStep = errors.New("reindex: wrong step")

// Rethrottle sets the copy rate (documents per second, -1 = unthrottled).
// Faster takes effect at once; slower after the batch in flight.
func (o *Orchestrator) Rethrottle(ctx context.Context, id string, rps float64) error {
	if rps != -1 && !(rps > 0) {
		return fieldErr("requests_per_second", "-1 (unthrottled) or > 0", "got %v", rps)
	}
	st, err := o.taskID(ctx, id)
	if err != nil {
		return err
	}
	if !st.Paused {
		if err := rethrottle(ctx, o.os, st.TaskID, rps); err != nil {
			return err
		}
	}
	return o.store.set(ctx, id, fRPS, formatRate(rps))
}

// Pause slows the copy to Config.PauseRequestsPerSecond.
func (o *Orchestrator) Pause(ctx context.Context, id string) error {
	st, err := o.taskID(ctx, id)
	if err != nil {
		return err
	}
	if err := rethrottle(ctx, o.os, st.TaskID, o.cfg.PauseRequestsPerSecond); err != nil {
		return err
	}
	return o.store.set(ctx, id, fPaused, "1")
}

// Resume restores the rate the copy had before Pause.
func (o *Orchestrator) Resume(ctx context.Context, id string) error {
	st, err := o.taskID(ctx, id)
	if err != nil {
		return err
	}
	if err := rethrottle(ctx, o.os, st.TaskID, st.RequestsPerSecond); err != nil {
		return err
	}
	return o.store.set(ctx, id, fPaused, "0")
}

// Rollback moves the alias back to the source. After the swap it catches
// the source up with what the live indexer wrote only into the target, then
// swaps back in one request (under the same write freeze as the swap).
// Before the swap it cancels the copy and deletes the target (the alias
// never moved).
func (o *Orchestrator) Rollback(ctx context.Context, id string) error {
	st, fields, err := o.store.load(ctx, id)
	if err != nil {
		return err
	}
	switch st.Step {
	case StepSwapped, StepDone, StepRollingBack:
		l, err := o.store.acquireLease(ctx, id, o.cfg.LeaseTTL, o.cfg.LeaseTTL+2*time.Second)
		if err != nil {
			return err
		}
		defer l.release(context.WithoutCancel(ctx))
		if st, fields, err = o.store.load(ctx, id); err != nil {
			return err
		}
		if err := o.liftFreeze(ctx, st, fields); err != nil {
			return err
		}
		if st.Step != StepRollingBack {
			if err := o.store.setStep(ctx, id, StepRollingBack); err != nil {
				return err
			}
		}
		return o.rollbackAfterSwap(ctx, st, fields)
	case StepRolledBack, StepAborted, StepCleaned:
		return fmt.Errorf("%w: job %s is already %s", ErrWrongStep, id, st.Step)
	}
	// Before the swap. The lease makes a running orchestrator of this job
	// stop first (it loses nothing: the job just ends aborted).
	if st.TaskID != "" {
		if err := cancelTask(ctx, o.os, st.TaskID); err != nil {
			return err
		}
	}
	if cur, err := aliasTarget(ctx, o.os, st.Alias); err == nil && cur == st.Target {
		return fmt.Errorf("alias %s already points at %s although job %s is in step %s; not deleting it", st.Alias, st.Target, id, st.Step)
	}
	_ = removeAliases(ctx, o.os, o.catchUpAliases(st, st.Target))
	if err := deleteIndex(ctx, o.os, st.Target); err != nil {
		return err
	}
	if err := o.store.setStep(ctx, id, StepAborted); err != nil {
		return err
	}
	return o.store.releaseLock(ctx, st.Alias, id)
}

func (o *Orchestrator) rollbackAfterSwap(ctx context.Context, st Status, fields map[string]string) error {
	// The live indexer wrote into the target from the swap on (and the
	// writes the freeze refused): replay from its frontier at the freeze.
	if _, err := o.switchAlias(ctx, st, fields, st.Target, st.Source, "back", fBackStart, StepRolledBack); err != nil {
		return fmt.Errorf("reindex: roll back job %s: %w", st.ID, err)
	}
	// The post-swap pass of the rollback starts at the rollback's final
	// pass end, which switchAlias stored under fSwap.
	fields, err := o.store.fields(ctx, st.ID)
	if err != nil {
		return err
	}
	if _, err := o.afterSwap(ctx, st, fields, st.Source, "backpost", StepRolledBack); err != nil {
		return fmt.Errorf("reindex: roll back job %s: %w", st.ID, err)
	}
	if err := o.store.setStep(ctx, st.ID, StepRolledBack); err != nil {
		return err
	}
	o.log.Info("rolled back", "job", st.ID, "alias", st.Alias, "index", st.Source)
	return nil
}

// Cleanup deletes the index the alias no longer points at: the source of a
// done job, the target of a rolled-back, aborted or failed one. It ends the
// job and frees the alias for the next one.
func (o *Orchestrator) Cleanup(ctx context.Context, id string) (deleted string, err error) {
	st, err := o.Status(ctx, id)
	if err != nil {
		return "", err
	}
	switch st.Step {
	case StepDone:
		deleted = st.Source
	case StepRolledBack, StepAborted, StepFailed:
		deleted = st.Target
	default:
		return "", fmt.Errorf("%w: job %s is in step %s; cleanup needs done, rolled_back, aborted or failed", ErrWrongStep, id, st.Step)
	}
	cur, err := aliasTarget(ctx, o.os, st.Alias)
	if err != nil {
		return "", err
	}
	if cur == deleted {
		return "", fmt.Errorf("alias %s points at %s; not deleting it", st.Alias, deleted)
	}
	if st.TaskID != "" && st.Step == StepFailed {
		_ = cancelTask(ctx, o.os, st.TaskID)
	}
	_ = removeAliases(ctx, o.os, append(o.catchUpAliases(st, st.Target), o.catchUpAliases(st, st.Source)...))
	if err := deleteIndex(ctx, o.os, deleted); err != nil {
		return "", err
	}
	if err := o.store.setStep(ctx, id, StepCleaned); err != nil {
		return "", err
	}
	return deleted, o.store.releaseLock(ctx, st.Alias, id)
}

// liftFreeze lifts a write freeze a killed orchestrator left on an index.
func (o *Orchestrator) liftFreeze(ctx context.Context, st Status, fields map[string]string) error {
	frozen := fields[fFrozen]
	if frozen == "" {
		return nil
	}
	o.log.Warn("lifting a write freeze left by a stopped orchestrator", "job", st.ID, "index", frozen)
	if err := setWriteFreeze(ctx, o.os, frozen, false); err != nil {
		return err
	}
	return o.store.set(ctx, st.ID, fFrozen, "")
}
