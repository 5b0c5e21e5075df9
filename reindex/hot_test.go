package reindex

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
)

// TestHotShopsReindexKeepsTheTable reindexes the hot layout's shop index
// while the hot indexer applies hot updates, then reads every shop's hot
// fields as searches see them after the swap (the baedal-hot table, through
// the search extension on the hot menus alias) and compares them with the
// latest event of the shop. The copy writes documents, not table rows, so
// without the rebuild of the new index's table before the catch-up the
// shops the catch-up did not touch would be missing from the table.
func TestHotShopsReindexKeepsTheTable(t *testing.T) {
	e := newTestEnv(t, "")
	if !slices.Contains(stacktest.Layouts(t, e.os), layout.Hot) {
		return // said why (and failed in CI)
	}
	e.cleanup(t)
	ctx := context.Background()
	const seed, numShops = 21, 400
	if err := e.cfg.Layout.EnsureIndices(ctx, e.os, layout.Hot); err != nil {
		t.Fatal(err)
	}
	shopsAlias := e.cfg.Layout.Alias(layout.RoleHotShops)
	source, err := aliasTarget(ctx, e.os, shopsAlias)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.evlog.Append(ctx, initialLoad(seed, numShops)); err != nil {
		t.Fatal(err)
	}
	icfg := e.indexerConfig()
	icfg.Layouts = []layout.Kind{layout.Hot}
	w, err := indexer.NewWorker(icfg, layout.Hot, e.evlog, e.os, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(wctx) }()
	t.Cleanup(func() {
		stopWorker()
		if err := <-workerDone; err != nil {
			t.Errorf("hot indexer: %v", err)
		}
	})
	waitHotDrained(t, e)

	var app appender
	e.startAppender(t, catalog.NewEventStream(seed, numShops), 100, &app)
	halted := false
	defer func() {
		if !halted {
			app.halt()
		}
	}()
	o := e.orchestrator(t, nil)
	opts := DefaultOptions()
	opts.Alias, opts.RequestsPerSecond, opts.BatchSize = shopsAlias, 200, 50 // ~2 s of copy under updates
	job, err := o.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	done, _ := o.Status(ctx, job.ID)
	if cur, _ := aliasTarget(ctx, e.os, shopsAlias); cur != job.Target || done.Step != StepDone || done.MismatchedDocs != 0 {
		t.Fatalf("alias on %s (want %s), step %s, mismatched %d", cur, job.Target, done.Step, done.MismatchedDocs)
	}
	// The copy ran with a request translog; after the swap the target has
	// the layout's async one, which the live indexer's flush-confirmed
	// acknowledgements cover.
	settings, err := flatSettings(ctx, e.os, job.Target, "index.translog.durability")
	if err != nil {
		t.Fatal(err)
	}
	if got := settings["index.translog.durability"]; got != layout.DurabilityAsync {
		t.Errorf("target %s translog durability %q after the swap, want %s", job.Target, got, layout.DurabilityAsync)
	}
	time.Sleep(time.Second) // updates after the swap: rows into the new index's table
	app.halt()
	halted = true
	waitHotDrained(t, e)
	app.mu.Lock()
	want := expectedStates(t, seed, numShops, app.events)
	app.mu.Unlock()

	got := hotRows(t, e)
	wrong := 0
	for id, st := range want {
		row, ok := got[id]
		switch {
		case st.Deleted:
			if ok {
				wrong++
				t.Errorf("shop %d was deleted (version %d) but the table has %+v", id, st.Version, row)
			}
		case !ok:
			wrong++
			if wrong <= 5 {
				t.Errorf("shop %d (version %d) is missing from the table of %s", id, st.Version, job.Target)
			}
		default:
			wantRow := indexer.HotEntryOf(st)
			row.ID = id
			if row != wantRow {
				wrong++
				if wrong <= 5 {
					t.Errorf("shop %d: table row %+v, want %+v", id, row, wantRow)
				}
			}
		}
	}
	t.Logf("hot table after the swap: %d shops compared after %d updates, %d wrong; catch-up %d events", len(want), len(app.events), wrong, done.CatchUpEvents)

	// Rollback: the source's table takes the rows written only into the
	// new index's.
	if err := o.Rollback(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if cur, _ := aliasTarget(ctx, e.os, shopsAlias); cur != source {
		t.Fatalf("after rollback the alias is on %s, want %s", cur, source)
	}
	got = hotRows(t, e)
	for id, st := range want {
		if row, ok := got[id]; !st.Deleted && (!ok || row.Version != st.Version) {
			t.Errorf("after rollback: shop %d has row %+v (found %v), want version %d", id, row, ok, st.Version)
			break
		}
	}
}

// hotRows reads the hot fields of every shop as searches see them: a
// search on the hot menus alias with the baedal_hot extension naming the
// hot shops alias (its table).
func hotRows(t *testing.T, e *testEnv) map[int64]indexer.HotEntry {
	t.Helper()
	ctx := context.Background()
	menus, shops := e.cfg.Layout.Alias(layout.RoleHotMenus), e.cfg.Layout.Alias(layout.RoleHotShops)
	if err := e.os.Do(ctx, http.MethodPost, "/"+menus+"/_refresh", nil, nil); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"size": 10000, "_source": false, "query": map[string]any{"match_all": map[string]any{}},
		"ext": map[string]any{"baedal_hot": map[string]any{"table": shops}}})
	var resp struct {
		Hits struct {
			Hits []struct {
				ID     string `json:"_id"`
				Fields struct {
					Hot []indexer.HotEntry `json:"baedal_hot"`
				} `json:"fields"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := e.os.Do(ctx, http.MethodPost, "/"+menus+"/_search", body, &resp); err != nil {
		t.Fatal(err)
	}
	out := map[int64]indexer.HotEntry{}
	for _, h := range resp.Hits.Hits {
		if len(h.Fields.Hot) == 1 {
			id, _ := strconv.ParseInt(h.ID, 10, 64)
			out[id] = h.Fields.Hot[0]
		}
	}
	return out
}

func waitHotDrained(t *testing.T, e *testEnv) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok := true
		for p := range e.cfg.Log.Partitions {
			lag, pending, err := e.evlog.Consumer(indexer.GroupName(layout.Hot), p).Lag(context.Background())
			if err != nil || lag != 0 || pending != 0 {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the hot indexer did not drain the log in 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
