package linkstore

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Mode is a step of the migration from an old store (old Redis, old
// format) to a new one (SPEC §S4 "Migration").
type Mode string

// The migration modes, in order.
const (
	// ModeOldOnly: read and write the old store only.
	ModeOldOnly Mode = "old-only"
	// ModeDualWrite: write both (old first), read the old.
	ModeDualWrite Mode = "dual-write"
	// ModeShadowRead: write both, serve reads from the old, and read the new
	// in the background, comparing field by field.
	ModeShadowRead Mode = "shadow-read"
	// ModeNewOnly: read and write the new store only.
	ModeNewOnly Mode = "new-only"
)

// Modes lists the modes in migration order.
func Modes() []Mode { return []Mode{ModeOldOnly, ModeDualWrite, ModeShadowRead, ModeNewOnly} }

func modeNames() []string {
	out := make([]string, 0, 4)
	for _, m := range Modes() {
		out = append(out, string(m))
	}
	return out
}

// ParseMode parses a mode name; the error names the allowed values.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("linkstore: mode %q is not one of %s", s, strings.Join(modeNames(), ", "))
}

// NextModes are the modes a switch from m may go to: one step forward or
// back, so no step of the migration (and no write) is skipped.
func (m Mode) NextModes() []Mode {
	modes := Modes()
	i := slices.Index(modes, m)
	var out []Mode
	if i > 0 {
		out = append(out, modes[i-1])
	}
	if i >= 0 && i < len(modes)-1 {
		out = append(out, modes[i+1])
	}
	return out
}

func (m Mode) writesOld() bool { return m != ModeNewOnly }
func (m Mode) writesNew() bool { return m != ModeOldOnly }
func (m Mode) readsOld() bool  { return m != ModeNewOnly }

// ErrModeTransition: a mode switch skips a step (or there is no old store).
var ErrModeTransition = errors.New("linkstore: mode transition not allowed")

// ServiceConfig configures a Service.
type ServiceConfig struct {
	// RefreshInterval is how often the mode and dictionaries are re-read
	// from Redis, so that several server processes agree within it.
	RefreshInterval time.Duration
	// ShadowWorkers bounds the background shadow reads in flight;
	// ShadowQueue bounds those waiting. A full queue drops the comparison
	// (counted as skipped) rather than slowing the request.
	ShadowWorkers, ShadowQueue int
	// ShadowTimeout bounds one background read of the new store.
	ShadowTimeout time.Duration
	// MaxSamples bounds the difference samples kept in the report.
	MaxSamples int
	// MaxLifetime bounds the expires_at of a click created through the API:
	// it must be after now and at most now+MaxLifetime. 0 means the new
	// store's TTL. A click created without expires_at expires after
	// min(new store's TTL, MaxLifetime).
	MaxLifetime time.Duration
	// AppSchemes are the custom URL schemes of app deep links (baedal://...)
	// that a deep_link_url may use besides https and http. fallback_url and
	// tracking_link are web pages: https or http only.
	AppSchemes []string
}

// DefaultServiceConfig returns the defaults.
func DefaultServiceConfig() ServiceConfig {
	return ServiceConfig{RefreshInterval: time.Second, ShadowWorkers: 4, ShadowQueue: 1024, ShadowTimeout: 2 * time.Second, MaxSamples: 50,
		AppSchemes: []string{DefaultAppScheme}}
}

// DefaultAppScheme is the scheme of the demo app's deep links (Generate).
const DefaultAppScheme = "baedal"

// Validate names the first invalid field.
func (c ServiceConfig) Validate() error {
	switch {
	case c.RefreshInterval < 10*time.Millisecond || c.RefreshInterval > time.Minute:
		return fmt.Errorf("links-mode-refresh: got %s, allowed: 10ms..1m", c.RefreshInterval)
	case c.ShadowWorkers < 1 || c.ShadowWorkers > 256:
		return fmt.Errorf("links-shadow-workers: got %d, allowed: 1..256", c.ShadowWorkers)
	case c.ShadowQueue < 1 || c.ShadowQueue > 1<<20:
		return fmt.Errorf("links-shadow-queue: got %d, allowed: 1..%d", c.ShadowQueue, 1<<20)
	case c.ShadowTimeout <= 0:
		return fmt.Errorf("links-shadow-timeout: got %s, must be > 0", c.ShadowTimeout)
	case c.MaxSamples < 0 || c.MaxSamples > 10000:
		return fmt.Errorf("links-max-samples: got %d, allowed: 0..10000", c.MaxSamples)
	case c.MaxLifetime != 0 && (c.MaxLifetime < time.Second || c.MaxLifetime > 30*24*time.Hour):
		return fmt.Errorf("links-max-lifetime: got %s, allowed: 0 (the store TTL) or 1s..720h", c.MaxLifetime)
	}
	for _, scheme := range c.AppSchemes {
		if err := validateAppScheme(scheme); err != nil {
			return fmt.Errorf("links-app-schemes: %w", err)
		}
	}
	return nil
}

// Flags binds the configuration.
func (c *ServiceConfig) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&c.RefreshInterval, "links-mode-refresh", c.RefreshInterval, "how often the migration mode and dictionaries are re-read from Redis")
	fs.IntVar(&c.ShadowWorkers, "links-shadow-workers", c.ShadowWorkers, "background shadow reads in flight (shadow-read mode)")
	fs.IntVar(&c.ShadowQueue, "links-shadow-queue", c.ShadowQueue, "shadow comparisons waiting; more are dropped and counted")
	fs.DurationVar(&c.ShadowTimeout, "links-shadow-timeout", c.ShadowTimeout, "timeout of one shadow read")
	fs.IntVar(&c.MaxSamples, "links-max-samples", c.MaxSamples, "difference samples kept in the migration report")
	fs.DurationVar(&c.MaxLifetime, "links-max-lifetime", c.MaxLifetime, "latest expires_at of a new click, from now (0 = --links-ttl)")
	fs.Var((*schemeList)(&c.AppSchemes), "links-app-schemes", "comma-separated custom deep-link schemes allowed besides https and http")
}

// Service is the click store as the API sees it: one store, or an old and
// a new store with the migration mode deciding where reads and writes go.
// The mode lives in the new store's Redis (key <ns>linkstore:migration:mode)
// and is cached, refreshed every RefreshInterval. The shadow-read report
// lives there too (hash <ns>linkstore:migration:report, list
// <ns>linkstore:migration:samples), so every process adds to one report.
type Service struct {
	cfg      ServiceConfig
	old, new *Store
	rdb      redis.Cmdable // the new store's primary: mode and report
	log      *slog.Logger
	now      func() time.Time

	// maxLifetime and defaultLifetime: see ServiceConfig.MaxLifetime.
	maxLifetime, defaultLifetime time.Duration

	mode    atomic.Value // Mode
	skipped atomic.Int64 // shadow comparisons dropped since the last flush to the report
	shadow  chan shadowJob
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closeMu sync.Mutex
	closed  bool

	writes, shadowResults *prometheus.CounterVec
	dualWriteErrors       prometheus.Counter

	mem memoryCodecs // the codecs of the memory report
}

type shadowJob struct {
	id  ClickID
	old Stored
}

// NewService starts a service. old may be nil: then the mode is always
// new-only. It reads the mode (default old-only when an old store is given)
// and starts the refresh loop and the shadow workers; Close stops them.
func NewService(ctx context.Context, cfg ServiceConfig, oldStore, newStore *Store, newPrimary redis.Cmdable, log *slog.Logger, reg prometheus.Registerer) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if newStore == nil || newPrimary == nil {
		return nil, errors.New("linkstore: NewService needs the new store and its primary")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Service{cfg: cfg, old: oldStore, new: newStore, rdb: newPrimary, log: log, now: time.Now, shadow: make(chan shadowJob, cfg.ShadowQueue)}
	s.maxLifetime = cfg.MaxLifetime
	if s.maxLifetime == 0 {
		s.maxLifetime = newStore.cfg.TTL
	}
	s.defaultLifetime = min(newStore.cfg.TTL, s.maxLifetime)
	s.writes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baedal_links_writes_total", Help: "Click records written, by store (old, new)."}, []string{"store"})
	s.shadowResults = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baedal_links_shadow_reads_total", Help: "Shadow-read comparisons, by result (equal, different, missing_in_new, error, skipped)."}, []string{"result"})
	s.dualWriteErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "baedal_links_dual_write_errors_total", Help: "Writes to the new store that failed while the old one succeeded."})
	for _, c := range []prometheus.Collector{s.writes, s.shadowResults, s.dualWriteErrors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("linkstore: register metrics: %w", err)
		}
	}
	if err := s.refreshMode(ctx); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.wg.Add(1 + cfg.ShadowWorkers)
	go s.refreshLoop(runCtx)
	for range cfg.ShadowWorkers {
		go s.shadowWorker(runCtx)
	}
	return s, nil
}

// Close stops the background work and waits for it.
func (s *Service) Close() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.stop()
	s.wg.Wait()
}

// Old and New return the stores (Old may be nil).
func (s *Service) Old() *Store { return s.old }

// New returns the new store.
func (s *Service) New() *Store { return s.new }

func (s *Service) modeKey() string    { return s.new.cfg.Namespace + "linkstore:migration:mode" }
func (s *Service) reportKey() string  { return s.new.cfg.Namespace + "linkstore:migration:report" }
func (s *Service) samplesKey() string { return s.new.cfg.Namespace + "linkstore:migration:samples" }

// Mode returns the cached mode.
func (s *Service) Mode() Mode { return s.mode.Load().(Mode) }

func (s *Service) defaultMode() Mode {
	if s.old == nil {
		return ModeNewOnly
	}
	return ModeOldOnly
}

func (s *Service) refreshMode(ctx context.Context) error {
	if s.old == nil {
		s.mode.Store(ModeNewOnly)
		return nil
	}
	v, err := s.rdb.Get(ctx, s.modeKey()).Result()
	if errors.Is(err, redis.Nil) {
		s.mode.Store(s.defaultMode())
		return nil
	}
	if err != nil {
		return fmt.Errorf("linkstore: read migration mode %s: %w", s.modeKey(), err)
	}
	m, err := ParseMode(v)
	if err != nil {
		return fmt.Errorf("linkstore: key %s: %w", s.modeKey(), err)
	}
	s.mode.Store(m)
	return nil
}

func (s *Service) refreshLoop(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RefreshInterval*5)
		if n := s.skipped.Swap(0); n > 0 {
			if err := s.rdb.HIncrBy(rctx, s.reportKey(), "skipped", n).Err(); err != nil {
				s.skipped.Add(n)
				s.log.Warn("update migration report", "err", err)
			}
		}
		if err := s.refreshMode(rctx); err != nil && ctx.Err() == nil {
			s.log.Warn("refresh migration mode", "err", err)
		}
		for _, st := range []*Store{s.old, s.new} {
			if st != nil {
				if err := st.ReloadDictionaries(rctx); err != nil && ctx.Err() == nil {
					s.log.Warn("reload dictionaries", "namespace", st.cfg.Namespace, "err", err)
				}
			}
		}
		cancel()
	}
}

// SetMode switches the migration mode for every process (they follow within
// RefreshInterval; this one at once). Only a step forward or back is
// allowed. Entering shadow-read starts a fresh report.
func (s *Service) SetMode(ctx context.Context, m Mode) error {
	if _, err := ParseMode(string(m)); err != nil {
		return err
	}
	if err := s.refreshMode(ctx); err != nil {
		return err
	}
	cur := s.Mode()
	if m == cur {
		return nil
	}
	if s.old == nil {
		return fmt.Errorf("%w: no old store is configured, the mode is always %s", ErrModeTransition, ModeNewOnly)
	}
	if !slices.Contains(cur.NextModes(), m) {
		return fmt.Errorf("%w: from %s to %s skips a step; allowed next: %v", ErrModeTransition, cur, m, cur.NextModes())
	}
	if m == ModeShadowRead {
		if err := s.ResetReport(ctx); err != nil {
			return err
		}
	}
	if err := s.rdb.Set(ctx, s.modeKey(), string(m), 0).Err(); err != nil {
		return fmt.Errorf("linkstore: set migration mode: %w", err)
	}
	s.mode.Store(m)
	s.log.Info("links migration mode switched", "from", cur, "to", m)
	return nil
}

// Create stores a new click where the mode says, and never replaces a
// record (ErrExists). The store that is read decides a conflict with one
// SET NX: the old one in old-only, dual-write and shadow-read, the new one
// in new-only. In dual-write and shadow-read the new store is written next,
// also with SET NX: if it holds the id already (written in new-only before
// a step back), the create is undone in the old store and is ErrExists too,
// so a read after the cut-over never serves another client's record. Any
// other error of the new store is logged and counted, and shows up as
// missing_in_new in the report.
func (s *Service) Create(ctx context.Context, rec *Record) error {
	m := s.Mode()
	if !m.writesOld() {
		if err := s.new.Create(ctx, rec); err != nil {
			return err
		}
		s.writes.WithLabelValues("new").Inc()
		return nil
	}
	oldValue, err := s.old.create(ctx, rec)
	if err != nil {
		return err
	}
	s.writes.WithLabelValues("old").Inc()
	if !m.writesNew() {
		return nil
	}
	err = s.new.Create(ctx, rec)
	switch {
	case errors.Is(err, ErrExists):
		if uerr := s.old.deleteIfUnchanged(ctx, rec.ClickID, oldValue); uerr != nil {
			return fmt.Errorf("linkstore: click %s exists in the new store only, and undoing its create in the old store failed: %w", rec.ClickID, uerr)
		}
		return err
	case err != nil:
		s.dualWriteErrors.Inc()
		s.log.Warn("dual write to the new store failed", "click_id", rec.ClickID.String(), "err", err)
		return nil
	}
	s.writes.WithLabelValues("new").Inc()
	return nil
}

// Get reads a record where the mode says; in shadow-read it also queues a
// background comparison with the new store.
func (s *Service) Get(ctx context.Context, id ClickID) (Stored, error) {
	m := s.Mode()
	if !m.readsOld() {
		return s.new.Get(ctx, id)
	}
	st, err := s.old.Get(ctx, id)
	if err != nil {
		return st, err
	}
	if m == ModeShadowRead {
		s.queueShadow(id, st)
	}
	return st, nil
}

// Resolve marks the click consumed and returns its record. While the old
// store is read, it is resolved there (the answer) and the consumed flag is
// also set in the new store when it is written (best effort), so the state
// survives the cut-over.
func (s *Service) Resolve(ctx context.Context, id ClickID) (Resolution, error) {
	m := s.Mode()
	if !m.readsOld() {
		return s.new.Resolve(ctx, id)
	}
	res, err := s.old.Resolve(ctx, id)
	if err != nil {
		return res, err
	}
	if m.writesNew() {
		if _, err := s.new.Resolve(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			s.log.Warn("mark consumed in the new store failed", "click_id", id.String(), "err", err)
		}
	}
	if m == ModeShadowRead {
		s.queueShadow(id, Stored{Record: res.Record, Consumed: true})
	}
	return res, nil
}

func (s *Service) queueShadow(id ClickID, old Stored) {
	select {
	case s.shadow <- shadowJob{id: id, old: old}:
	default:
		// Counted locally and flushed by the refresh loop: a full queue
		// means Redis is slow, so the request path must not wait on it.
		s.shadowResults.WithLabelValues("skipped").Inc()
		s.skipped.Add(1)
	}
}

func (s *Service) shadowWorker(ctx context.Context) {
	defer s.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-s.shadow:
			s.compare(ctx, job)
		}
	}
}

// compare reads the new store and records the outcome in the report.
func (s *Service) compare(ctx context.Context, job shadowJob) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.ShadowTimeout)
	defer cancel()
	got, err := s.new.Get(rctx, job.id)
	var result string
	var diffs []FieldDiff
	switch {
	case errors.Is(err, ErrNotFound):
		result = "missing_in_new"
	case err != nil:
		result = "error"
		s.log.Warn("shadow read of the new store failed", "click_id", job.id.String(), "err", err)
	default:
		diffs = DiffRecords(job.old.Record, got.Record)
		if job.old.Consumed != got.Consumed {
			diffs = append(diffs, FieldDiff{Field: "consumed", Old: strconv.FormatBool(job.old.Consumed), New: strconv.FormatBool(got.Consumed)})
		}
		result = "equal"
		if len(diffs) > 0 {
			result = "different"
			s.log.Warn("shadow read found differences", "click_id", job.id.String(), "fields", len(diffs), "first_field", diffs[0].Field)
		}
	}
	s.shadowResults.WithLabelValues(result).Inc()
	for i := range diffs {
		diffs[i].ClickID = job.id.String()
	}
	s.bumpReport(rctx, result, diffs)
}

// bumpReport adds one comparison to the shared report in Redis.
func (s *Service) bumpReport(ctx context.Context, result string, diffs []FieldDiff) {
	pipe := s.rdb.Pipeline()
	pipe.HIncrBy(ctx, s.reportKey(), "compared", 1)
	pipe.HIncrBy(ctx, s.reportKey(), result, 1)
	for _, d := range diffs {
		pipe.HIncrBy(ctx, s.reportKey(), "field:"+d.Field, 1)
	}
	if len(diffs) > 0 && s.cfg.MaxSamples > 0 {
		for _, d := range diffs {
			b, _ := json.Marshal(d)
			pipe.LPush(ctx, s.samplesKey(), b)
		}
		pipe.LTrim(ctx, s.samplesKey(), 0, int64(s.cfg.MaxSamples-1))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		s.log.Warn("update migration report", "err", err)
	}
}

// ResetReport empties the shared report.
func (s *Service) ResetReport(ctx context.Context) error {
	// Two DELs, not one: on a Redis Cluster the keys are in two slots.
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Del(ctx, s.reportKey())
		pipe.Del(ctx, s.samplesKey())
		return nil
	})
	if err != nil {
		return fmt.Errorf("linkstore: reset migration report: %w", err)
	}
	return nil
}

// FieldDiff is one field that differs between the old and the new store.
type FieldDiff struct {
	ClickID string `json:"click_id,omitempty"`
	Field   string `json:"field"`
	Old     string `json:"old"`
	New     string `json:"new"`
}

// Report is the shadow-read report.
type Report struct {
	Mode         Mode             `json:"mode"`
	Compared     int64            `json:"compared"`
	Equal        int64            `json:"equal"`
	Different    int64            `json:"different"`
	MissingInNew int64            `json:"missing_in_new"`
	Errors       int64            `json:"errors"`
	Skipped      int64            `json:"skipped"`
	FieldCounts  map[string]int64 `json:"field_counts"`
	Samples      []FieldDiff      `json:"samples"`
}

// Report reads the shared report.
func (s *Service) Report(ctx context.Context) (Report, error) {
	r := Report{Mode: s.Mode(), FieldCounts: map[string]int64{}, Samples: []FieldDiff{}}
	h, err := s.rdb.HGetAll(ctx, s.reportKey()).Result()
	if err != nil {
		return r, fmt.Errorf("linkstore: read migration report: %w", err)
	}
	for k, v := range h {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "compared":
			r.Compared = n
		case "equal":
			r.Equal = n
		case "different":
			r.Different = n
		case "missing_in_new":
			r.MissingInNew = n
		case "error":
			r.Errors = n
		case "skipped":
			r.Skipped = n
		default:
			if f, ok := strings.CutPrefix(k, "field:"); ok {
				r.FieldCounts[f] = n
			}
		}
	}
	samples, err := s.rdb.LRange(ctx, s.samplesKey(), 0, -1).Result()
	if err != nil {
		return r, fmt.Errorf("linkstore: read migration samples: %w", err)
	}
	for _, raw := range samples {
		var d FieldDiff
		if json.Unmarshal([]byte(raw), &d) == nil {
			r.Samples = append(r.Samples, d)
		}
	}
	return r, nil
}

// DiffRecords compares two records field by field and returns the fields
// that differ, named by their JSON paths (e.g. "device.user_agent",
// "sub_params.utm_id"), with both values printed. nil records compare as
// the zero record.
func DiffRecords(oldRec, newRec *Record) []FieldDiff {
	var zero Record
	if oldRec == nil {
		oldRec = &zero
	}
	if newRec == nil {
		newRec = &zero
	}
	var out []FieldDiff
	diffValue("", reflect.ValueOf(*oldRec), reflect.ValueOf(*newRec), &out)
	return out
}

var (
	timeType = reflect.TypeFor[time.Time]()
)

func diffValue(path string, a, b reflect.Value, out *[]FieldDiff) {
	switch {
	case a.Kind() == reflect.Struct && a.Type() != timeType && a.Type().NumField() > 0 && a.Type().Field(0).IsExported():
		for i := range a.NumField() {
			f := a.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if path != "" {
				name = path + "." + name
			}
			diffValue(name, a.Field(i), b.Field(i), out)
		}
	case a.Kind() == reflect.Map:
		keys := map[string]bool{}
		for _, k := range a.MapKeys() {
			keys[k.String()] = true
		}
		for _, k := range b.MapKeys() {
			keys[k.String()] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			kv := reflect.ValueOf(k)
			av, bv := a.MapIndex(kv), b.MapIndex(kv)
			as, bs := "<absent>", "<absent>"
			if av.IsValid() {
				as = av.String()
			}
			if bv.IsValid() {
				bs = bv.String()
			}
			if as != bs {
				*out = append(*out, FieldDiff{Field: path + "." + k, Old: as, New: bs})
			}
		}
	case a.Type() == timeType:
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		if !ta.Equal(tb) {
			*out = append(*out, FieldDiff{Field: path, Old: ta.Format(time.RFC3339Nano), New: tb.Format(time.RFC3339Nano)})
		}
	default:
		if !a.Equal(b) {
			*out = append(*out, FieldDiff{Field: path, Old: fmt.Sprint(a.Interface()), New: fmt.Sprint(b.Interface())})
		}
	}
}
