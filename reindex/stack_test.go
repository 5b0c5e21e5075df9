package reindex

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// testEnv is a namespaced slice of the shared stack: index prefix and Redis
// key prefixes derived from the test's namespace.
type testEnv struct {
	st      *localstack.State
	ns      string
	clients *backend.Clients
	os      *osapi.Client
	cfg     Config
	evlog   *eventlog.Log
}

func newTestEnv(t *testing.T, ns string) *testEnv {
	t.Helper()
	st := stacktest.Require(t)
	if ns == "" {
		ns = stacktest.Namespace(t)
	}
	bc := backend.Defaults()
	bc.OpenSearch.URLs, bc.Redis.Addr, bc.Postgres.URL = st.OpenSearchURLs, st.RedisAddr, st.PostgresURL
	clients, err := backend.Open(context.Background(), bc)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{st: st, ns: ns, clients: clients, os: osapi.New(clients.OpenSearch)}
	e.cfg = testConfig(ns)
	if e.evlog, err = eventlog.New(e.cfg.Log, clients.Redis, nil, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(clients.Close)
	return e
}

func testConfig(ns string) Config {
	cfg := Defaults()
	cfg.Layout.Prefix = ns + "_"
	cfg.Log.Prefix = ns + ":"
	cfg.Log.Partitions = 3
	cfg.StatePrefix = ns + ":reindex:"
	cfg.PollEvery = 200 * time.Millisecond
	cfg.LeaseTTL = 2 * time.Second
	cfg.FreezeBelow = 1000
	cfg.MaxCatchUpPasses = 5
	return cfg
}

// cleanup deletes the namespace's indices and keys.
func (e *testEnv) cleanup(t *testing.T) {
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.os.Do(ctx, http.MethodDelete, "/"+e.ns+"_*?expand_wildcards=all&allow_no_indices=true", nil, nil)
		stacktest.DeleteKeys(ctx, e.clients.Redis, e.ns+":*", "{"+e.ns+":*")
	})
}

func (e *testEnv) orchestrator(t *testing.T, log *slog.Logger) *Orchestrator {
	t.Helper()
	o, err := New(e.cfg, e.os, e.clients.Redis, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (e *testEnv) indexerConfig() indexer.Config {
	icfg := indexer.Defaults()
	icfg.Layouts = []layout.Kind{layout.Nested}
	icfg.Layout, icfg.Log = e.cfg.Layout, e.cfg.Log
	icfg.BatchSize = 200
	icfg.RetryBase, icfg.RetryMax = 20*time.Millisecond, 300*time.Millisecond
	icfg.LagEvery = time.Second
	return icfg
}

// liveIndexer runs the real stream worker of the nested layout until the
// test ends.
// loadNested creates the nested layout's indices and writes the generated
// catalog's numShops shops into them through the indexer.
func (e *testEnv) loadNested(t *testing.T, seed uint64, numShops int) {
	t.Helper()
	ctx := context.Background()
	if err := e.cfg.Layout.EnsureIndices(ctx, e.os, layout.Nested); err != nil {
		t.Fatal(err)
	}
	ix, err := indexer.New(e.indexerConfig(), layout.Nested, e.os, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Apply(ctx, initialLoad(seed, numShops)); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) liveIndexer(t *testing.T) {
	t.Helper()
	w, err := indexer.NewWorker(e.indexerConfig(), layout.Nested, e.evlog, e.os, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("live indexer: %v", err)
		}
	})
}

// waitDrained waits until the live indexer acknowledged every entry.
func (e *testEnv) waitDrained(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok := true
		for p := range e.cfg.Log.Partitions {
			lag, pending, err := e.evlog.Consumer(indexer.GroupName(layout.Nested), p).Lag(context.Background())
			if err != nil || lag != 0 || pending != 0 {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the live indexer did not drain the log in 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// appender appends a steady stream of realistic events and keeps every
// appended event, in order, for the expected states.
type appender struct {
	mu     sync.Mutex
	events []catalog.Event
	stop   chan struct{}
	done   chan struct{}
}

func (e *testEnv) startAppender(t *testing.T, stream *catalog.EventStream, perSecond int, a *appender) {
	t.Helper()
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(a.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		per := max(1, perSecond/20)
		for {
			select {
			case <-a.stop:
				return
			case <-tick.C:
			}
			batch := make([]catalog.Event, per)
			for i := range batch {
				batch[i] = stream.Next()
			}
			if _, err := e.evlog.Append(context.Background(), batch); err != nil {
				t.Errorf("append: %v", err)
				return
			}
			a.mu.Lock()
			a.events = append(a.events, batch...)
			a.mu.Unlock()
		}
	}()
}

func (a *appender) halt() {
	close(a.stop)
	<-a.done
}

func initialLoad(seed uint64, numShops int) []catalog.Event {
	var out []catalog.Event
	for _, st := range catalog.NewGenerator(seed).Shops(numShops) {
		out = append(out, st.UpsertEvent())
	}
	return out
}

// expectedStates applies the events in order to the generated shops with
// catalog.ShopState.Apply: the latest accepted state of every shop.
func expectedStates(t *testing.T, seed uint64, numShops int, events []catalog.Event) map[int64]*catalog.ShopState {
	t.Helper()
	out := make(map[int64]*catalog.ShopState)
	for i, st := range catalog.NewGenerator(seed).Shops(numShops) {
		out[catalog.ShopID(i)] = &st
	}
	for _, ev := range events {
		st := out[ev.AggregateID()]
		if st == nil {
			st = &catalog.ShopState{}
			out[ev.AggregateID()] = st
		}
		if _, err := st.Apply(ev); err != nil {
			t.Fatalf("expected state: event %+v: %v", ev, err)
		}
	}
	return out
}

// compareIndex compares every document of index (or alias) with the
// expected states: a deleted shop has no document, every other shop's
// document is the nested document of its latest state at its version.
func compareIndex(t *testing.T, osc *osapi.Client, index string, want map[int64]*catalog.ShopState) (lost, stale int) {
	t.Helper()
	ids := make([]int64, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	got := map[int64]map[string]any{}
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		strIDs := make([]string, len(chunk))
		for i, id := range chunk {
			strIDs[i] = strconv.FormatInt(id, 10)
		}
		body, _ := json.Marshal(map[string]any{"ids": strIDs})
		var resp struct {
			Docs []struct {
				ID     string         `json:"_id"`
				Found  bool           `json:"found"`
				Source map[string]any `json:"_source"`
			} `json:"docs"`
		}
		if err := osc.Do(context.Background(), http.MethodPost, "/"+index+"/_mget?realtime=true", body, &resp); err != nil {
			t.Fatal(err)
		}
		for _, d := range resp.Docs {
			if d.Found {
				id, _ := strconv.ParseInt(d.ID, 10, 64)
				got[id] = d.Source
			}
		}
	}
	for _, id := range ids {
		st := want[id]
		doc, found := got[id]
		if st.Deleted {
			if found {
				stale++
				t.Errorf("%s: shop %d was deleted at version %d but has a document at version %v", index, id, st.Version, doc["version"])
			}
			continue
		}
		if !found {
			lost++
			t.Errorf("%s: shop %d (version %d) has no document", index, id, st.Version)
			continue
		}
		var wantDoc map[string]any
		raw, _ := json.Marshal(layout.BuildNested(st, st.Version))
		_ = json.Unmarshal(raw, &wantDoc)
		if !reflect.DeepEqual(doc, wantDoc) {
			if v, _ := doc["version"].(float64); int64(v) < st.Version {
				stale++
			} else {
				lost++
			}
			if lost+stale <= 5 {
				t.Errorf("%s: shop %d: document version %v, want version %d:\n got %v\nwant %v", index, id, doc["version"], st.Version, doc, wantDoc)
			}
		}
	}
	return lost, stale
}

// Environment of the orchestrator child process of the kill test.
const envKillChild = "BAEDAL_REINDEX_KILL_CHILD" // namespace, job id[, phase to stop in], comma-separated

// TestKillChildOrchestrator is not a test of its own: it is the orchestrator
// process TestLiveReindexSurvivesKilledOrchestrator starts and kills.
func TestKillChildOrchestrator(t *testing.T) {
	arg := os.Getenv(envKillChild)
	if arg == "" {
		t.Skip("helper process of TestLiveReindexSurvivesKilledOrchestrator")
	}
	ns, job, _ := strings.Cut(arg, ",")
	job, stopIn, _ := strings.Cut(job, ",")
	e := newTestEnv(t, ns)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	o := e.orchestrator(t, log)
	o.OnPhase = func(_, phase string) {
		fmt.Fprintf(os.Stderr, "PHASE %s\n", phase)
		if phase == stopIn {
			time.Sleep(time.Minute) // the parent kills this process now
		}
	}
	o.OnProgress = func(st Status) {
		fmt.Fprintf(os.Stderr, "PROGRESS step=%s done=%d total=%d\n", st.Step, st.Copy.Done(), st.Copy.Total)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := o.Run(ctx, job); err != nil {
		t.Fatal(err)
	}
}

// TestLiveReindexSurvivesKilledOrchestrator loads a catalog through the event
// log and the real indexer worker, keeps appending a steady stream of
// realistic updates, reindexes the nested index into 2 shards in a child
// process, SIGKILLs that process in the middle of the copy (the kills
// during the verification and the dual-write swap are
// TestKillDuringVerificationAndDualWrite's), resumes the job
// here, and compares every document of the new index with the latest event
// of its shop: zero lost, zero stale. Then it keeps writing, rolls back, and
// checks that the alias is on the old index and that it, too, holds the
// latest state of every shop (the writes that went only into the new index
// were caught up); cleanup then deletes the new index.
func TestLiveReindexSurvivesKilledOrchestrator(t *testing.T) {
	e := newTestEnv(t, "")
	e.cleanup(t)
	ctx := context.Background()
	const seed, numShops = 5, 1200
	if err := e.cfg.Layout.EnsureIndices(ctx, e.os, layout.Nested); err != nil {
		t.Fatal(err)
	}
	alias := e.cfg.Layout.Alias(layout.RoleNested)
	source, err := aliasTarget(ctx, e.os, alias)
	if err != nil {
		t.Fatal(err)
	}
	load := initialLoad(seed, numShops)
	if _, err := e.evlog.Append(ctx, load); err != nil {
		t.Fatal(err)
	}
	e.liveIndexer(t)
	e.waitDrained(t)

	var app appender
	e.startAppender(t, catalog.NewEventStream(seed, numShops), 100, &app)
	defer func() {
		if app.stop != nil {
			select {
			case <-app.done:
			default:
				app.halt()
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)

	o := e.orchestrator(t, nil)
	opts := DefaultOptions()
	opts.Alias, opts.Shards, opts.Slices = alias, 2, "auto"
	opts.RequestsPerSecond, opts.BatchSize = 150, 50 // ~8 s for 1,200 documents: time to kill it mid-copy
	job, err := o.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if job.Source != source || job.Target != alias+"_v2" || job.Step != StepPlanned {
		t.Fatalf("planned job %+v", job)
	}

	// The orchestrator runs in a child process; kill it once the copy has
	// copied something but not everything.
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChildOrchestrator$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envKillChild+"="+e.ns+","+job.ID, stacktest.EnvStateDir+"="+e.st.StateDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	midCopy := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			var done, total int64
			if _, err := fmt.Sscanf(line, "PROGRESS step=copying done=%d total=%d", &done, &total); err == nil && !signalled && done > 0 && done < total/2 {
				signalled = true
				close(midCopy)
			}
		}
	}()
	select {
	case <-midCopy:
	case <-time.After(2 * time.Minute):
		t.Fatal("the orchestrator did not report copy progress in 2 minutes")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("orchestrator did not die by SIGKILL: %v", cmd.ProcessState)
	}
	killed, err := o.Status(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if killed.Step != StepCopying || killed.TaskID == "" || killed.Copy.Done() >= killed.Copy.Total {
		t.Fatalf("killed in step %s, task %q, copy %d/%d: want mid-copy", killed.Step, killed.TaskID, killed.Copy.Done(), killed.Copy.Total)
	}
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != source {
		t.Fatalf("alias moved to %s before the copy finished", cur)
	}
	t.Logf("killed mid-copy: %d/%d copied, task %s", killed.Copy.Done(), killed.Copy.Total, killed.TaskID)
	if got := replicaSettings(t, e.os, job.Target); got != "replicas 0, auto-expand false" {
		t.Errorf("target during the copy: %s, want replicas 0, auto-expand false", got)
	}

	// Resume here: the same task is followed, then unthrottled.
	runErr := make(chan error, 1)
	go func() { runErr <- o.Run(ctx, job.ID) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := o.Rethrottle(ctx, job.ID, -1)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rethrottle: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	done, err := o.Status(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Step != StepDone || done.TaskID != killed.TaskID {
		t.Fatalf("after resume: step %s, task %s (killed task %s)", done.Step, done.TaskID, killed.TaskID)
	}
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != job.Target {
		t.Fatalf("alias on %s, want %s", cur, job.Target)
	}
	if s, _ := getIndexSettings(ctx, e.os, job.Target); s.Shards != 2 || s.RefreshInterval != "1s" {
		t.Errorf("target settings %+v, want 2 shards and the source's 1s refresh", s)
	}
	// Restored before the swap to the layout's configured setting, not
	// the copy's 0 or the source's count.
	if got, want := replicaSettings(t, e.os, job.Target), "replicas 0, auto-expand "+layout.DefaultReplicas; got != want {
		t.Errorf("target after the swap: %s, want %s (one node: 0-1 expands to 0)", got, want)
	}
	if done.CatchUpEvents == 0 {
		t.Errorf("no event was caught up although updates were appended during the copy")
	}
	// A shop the live load updated in every re-check round is explained,
	// not verified (more of them on a loaded machine); none may mismatch.
	// The live load creates and deletes shops, so the documents compared
	// are near numShops, not equal to it.
	if done.FreezeSeconds != 0 || done.ComparedDocs < numShops*9/10 || done.VerifiedDocs+done.ExplainedDocs != done.ComparedDocs ||
		done.VerifiedDocs < done.ComparedDocs*9/10 || done.MismatchedDocs != 0 {
		t.Errorf("freeze %.3fs, compared %d, verified %d, explained %d, mismatched %d: want no freeze, >= %d compared, all verified or explained (most verified), 0 mismatched",
			done.FreezeSeconds, done.ComparedDocs, done.VerifiedDocs, done.ExplainedDocs, done.MismatchedDocs, numShops*9/10)
	}
	t.Logf("copy: %+v; catch-up events %d (rejected %d), freeze %.3fs", done.Copy, done.CatchUpEvents, done.CatchUpRejected, done.FreezeSeconds)

	// Keep writing after the swap, then stop and compare.
	time.Sleep(time.Second)
	app.halt()
	e.waitDrained(t)
	app.mu.Lock()
	want := expectedStates(t, seed, numShops, app.events)
	appended := len(app.events)
	app.mu.Unlock()
	lost, stale := compareIndex(t, e.os, job.Target, want)
	t.Logf("new index: %d shops compared after %d live updates: %d lost, %d stale", len(want), appended, lost, stale)

	// Rollback while the live indexer writes into the new index.
	var app2 appender
	stream := catalog.NewEventStream(seed, numShops)
	for range appended { // continue the same stream
		stream.Next()
	}
	e.startAppender(t, stream, 100, &app2)
	time.Sleep(time.Second)
	if err := o.Rollback(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	app2.halt()
	e.waitDrained(t)
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != source {
		t.Fatalf("after rollback the alias is on %s, want %s", cur, source)
	}
	rolled, _ := o.Status(ctx, job.ID)
	if rolled.Step != StepRolledBack {
		t.Errorf("step after rollback %s", rolled.Step)
	}
	app2.mu.Lock()
	all := append(slices.Clone(app.events), app2.events...)
	app2.mu.Unlock()
	want = expectedStates(t, seed, numShops, all)
	lost, stale = compareIndex(t, e.os, alias, want)
	t.Logf("after rollback: %d more updates; old index: %d lost, %d stale", len(all)-appended, lost, stale)
	if n := searchCount(t, e.os, alias); n != liveCount(want) {
		t.Errorf("search on the alias counts %d shops, want %d", n, liveCount(want))
	}

	deleted, err := o.Cleanup(ctx, job.ID)
	if err != nil || deleted != job.Target {
		t.Fatalf("cleanup deleted %q, %v; want %s", deleted, err, job.Target)
	}
	if ok, _ := indexExists(ctx, e.os, job.Target); ok {
		t.Errorf("%s still exists after cleanup", job.Target)
	}
	// The alias is free for the next job.
	if _, err := o.Start(ctx, opts); err != nil {
		t.Errorf("a new job after cleanup: %v", err)
	}
}

// replicaSettings reads an index's replica count and auto-expansion.
func replicaSettings(t *testing.T, osc *osapi.Client, index string) string {
	t.Helper()
	s, err := flatSettings(context.Background(), osc, index, "index.number_of_replicas,index.auto_expand_replicas")
	if err != nil {
		t.Fatal(err)
	}
	return "replicas " + s["index.number_of_replicas"] + ", auto-expand " + s["index.auto_expand_replicas"]
}

func liveCount(want map[int64]*catalog.ShopState) int {
	n := 0
	for _, st := range want {
		if !st.Deleted {
			n++
		}
	}
	return n
}

func searchCount(t *testing.T, osc *osapi.Client, index string) int {
	t.Helper()
	if err := osc.Do(context.Background(), http.MethodPost, "/"+index+"/_refresh", nil, nil); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Count int `json:"count"`
	}
	if err := osc.Do(context.Background(), http.MethodGet, "/"+index+"/_count", nil, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestRecreatedTargetNeverGetsTheAlias deletes the target during the copy:
// _reindex may re-create it with dynamic mappings, and the job must fail
// before the swap with the alias still on the source.
func TestRecreatedTargetNeverGetsTheAlias(t *testing.T) {
	e := newTestEnv(t, "")
	e.cleanup(t)
	ctx := context.Background()
	e.loadNested(t, 9, 300)
	alias := e.cfg.Layout.Alias(layout.RoleNested)
	source, _ := aliasTarget(ctx, e.os, alias)
	o := e.orchestrator(t, nil)
	opts := DefaultOptions()
	opts.Alias, opts.RequestsPerSecond, opts.BatchSize = alias, 100, 20
	job, err := o.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- o.Run(ctx, job.ID) }()
	for {
		st, _ := o.Status(ctx, job.ID)
		if st.Step == StepCopying && st.Copy.Done() > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := deleteIndex(ctx, e.os, job.Target); err != nil {
		t.Fatal(err)
	}
	if err := o.Rethrottle(ctx, job.ID, -1); err != nil {
		t.Fatal(err)
	}
	// Depending on timing, the copy's bulks fail while the target is gone
	// (the task reports failures) or re-create it (the uuid check refuses
	// it); either way the job must fail before the swap.
	err = <-runErr
	if err == nil || !(strings.Contains(err.Error(), "not the index this job created") || strings.Contains(err.Error(), "failures")) {
		t.Fatalf("Run: %v, want a refusal of the re-created target or a failed copy", err)
	}
	st, _ := o.Status(ctx, job.ID)
	if st.Step != StepFailed || (st.FailedStep != StepCopied && st.FailedStep != StepCopying) {
		t.Errorf("step %s failed step %s, want failed in copying or copied", st.Step, st.FailedStep)
	}
	t.Logf("refused: %.200s", err)
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != source {
		t.Errorf("alias on %s, want %s", cur, source)
	}
	if deleted, err := o.Cleanup(ctx, job.ID); err != nil || deleted != job.Target {
		t.Errorf("cleanup: %q %v", deleted, err)
	}
}

// TestReplayReadsAppendedEvents checks the catch-up reader against the
// event log's real entry format and the replay start of a group.
func TestReplayReadsAppendedEvents(t *testing.T) {
	e := newTestEnv(t, "")
	e.cleanup(t)
	ctx := context.Background()
	events := initialLoad(3, 30)
	ids, err := e.evlog.Append(ctx, events)
	if err != nil {
		t.Fatal(err)
	}
	// No consumer group yet: replay starts after the last entry.
	start, err := replayStart(ctx, e.evlog, layout.Nested)
	if err != nil {
		t.Fatal(err)
	}
	for p, id := range start {
		last, _ := lastEntryID(ctx, e.clients.Redis, e.evlog.StreamKey(p))
		if id != last {
			t.Errorf("partition %d: start %s, want last entry %s", p, id, last)
		}
	}
	// A group that read entries but acknowledged none: replay starts right
	// before its oldest pending entry.
	c := e.evlog.Consumer(indexer.GroupName(layout.Nested), 0)
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	read, err := c.ReadNew(ctx, 5, 0)
	if err != nil || len(read) != 5 {
		t.Fatalf("read %d: %v", len(read), err)
	}
	if err := c.Ack(ctx, read[0].ID, read[1].ID); err != nil {
		t.Fatal(err)
	}
	start, err = replayStart(ctx, e.evlog, layout.Nested)
	if err != nil {
		t.Fatal(err)
	}
	third, _ := ParseStreamID(read[2].ID)
	if start[0] != third.Before().String() {
		t.Errorf("partition 0 start %s, want just before the oldest pending %s", start[0], read[2].ID)
	}
	msgs, err := e.clients.Redis.XRangeN(ctx, e.evlog.StreamKey(0), "("+start[0], "+", 1).Result()
	if err != nil || len(msgs) != 1 || msgs[0].ID != read[2].ID {
		t.Fatalf("reading after the start gives %v %v, want %s", msgs, err, read[2].ID)
	}
	raw, _ := msgs[0].Values[entryEventField].(string)
	evs, err := catalog.ParseEvents([]byte(raw))
	if err != nil || len(evs) != 1 || evs[0].AggregateID() != read[2].Event.AggregateID() {
		t.Fatalf("entry field %q does not hold the event: %q %v", entryEventField, raw, err)
	}
	_ = ids
}

// TestRestoreCommitsTheCopyBeforeReplicas checks that every document the
// copy wrote is in a Lucene commit when the job ends (no writes follow the
// copy here): peer recovery copies committed segment files and replays the
// operations after the last commit, so an uncommitted copy would make each
// added replica re-index it.
func TestRestoreCommitsTheCopyBeforeReplicas(t *testing.T) {
	e := newTestEnv(t, "")
	e.cleanup(t)
	ctx := context.Background()
	e.loadNested(t, 11, 200)
	o := e.orchestrator(t, nil)
	opts := DefaultOptions()
	opts.Alias = e.cfg.Layout.Alias(layout.RoleNested)
	job, err := o.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Indices map[string]struct {
			Shards map[string][]struct {
				Segments map[string]struct {
					NumDocs   int  `json:"num_docs"`
					Committed bool `json:"committed"`
				} `json:"segments"`
			} `json:"shards"`
		} `json:"indices"`
	}
	if err := e.os.Do(ctx, http.MethodGet, "/"+job.Target+"/_segments", nil, &resp); err != nil {
		t.Fatal(err)
	}
	var all, committed int
	for _, copies := range resp.Indices[job.Target].Shards {
		for _, c := range copies {
			for _, seg := range c.Segments {
				all += seg.NumDocs
				if seg.Committed {
					committed += seg.NumDocs
				}
			}
		}
	}
	if all == 0 || committed != all {
		t.Fatalf("target %s: %d of %d Lucene documents committed, want all", job.Target, committed, all)
	}
}
