package indexer

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// TestAsyncTranslogAcknowledgesAfterAFlush runs a worker on a layout with an
// async translog: its applied events stay pending until the flush loop
// confirms them, and when a primary changes first (here a primary moved by
// a reroute, which starts a new primary term), the worker applies every
// unacknowledged event again and then acknowledges them. Losing the
// operations themselves needs a killed node: TestSingleNodeKillRebuildsTheHotTable
// (app/nodeloss) does that.
func TestAsyncTranslogAcknowledgesAfterAFlush(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	e.cfg.Layouts = []layout.Kind{layout.Split}
	e.cfg.Layout.Shops.TranslogDurability = layout.DurabilityAsync
	e.cfg.Layout.Menus.TranslogDurability = layout.DurabilityAsync
	e.cfg.FlushEvery = 8 * time.Second
	evlog := newLog(t, e)
	const seed, numShops = 31, 12
	load := initialLoad(seed, numShops)
	if _, err := evlog.Append(ctx, load); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	w, err := NewWorker(e.cfg, layout.Split, evlog, e.os, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	want := expectedShops(t, seed, numShops, load)
	ids := slices.Sorted(maps.Keys(want))
	waitFor(t, 20*time.Second, "every shop indexed", func() bool {
		return len(fetchSources(t, e.os, e.cfg.Layout.Alias(layout.RoleShops), ids)) == numShops &&
			len(fetchSources(t, e.os, e.cfg.Layout.Alias(layout.RoleMenus), ids)) == numShops
	})
	if pending := pendingEntries(t, evlog, e.cfg); pending != int64(len(load)) {
		t.Fatalf("%d entries pending after their bulks, want all %d: acknowledgements must wait for the flush (every %s)", pending, len(load), e.cfg.FlushEvery)
	}

	// A new primary term on the shop index before the first flush.
	movePrimary(t, e.os, e.cfg.Layout.Alias(layout.RoleShops))
	waitFor(t, 40*time.Second, "a replay after the primary changed", func() bool {
		return counterValue(w.m.replays.WithLabelValues(string(layout.Split))) >= 1
	})
	waitFor(t, 40*time.Second, "every entry acknowledged after the replay", func() bool {
		return pendingEntries(t, evlog, e.cfg) == 0
	})
	if bad := compareLayout(t, e.os, &e.cfg.Layout, layout.Split, want); bad > 0 {
		t.Errorf("%d documents stale or missing after the replay", bad)
	}
}

// movePrimary fails the primary of shard 0 of the index behind alias (a
// reroute cancel), which OpenSearch allocates again with a new primary term,
// and waits until the index is back.
func movePrimary(t *testing.T, osc *osapi.Client, alias string) {
	t.Helper()
	ctx := context.Background()
	before, err := primaryTerms(ctx, osc, alias)
	if err != nil {
		t.Fatal(err)
	}
	var shards []struct {
		Index, Shard, Prirep, Node string
	}
	if err := osc.Do(ctx, http.MethodGet, "/_cat/shards/"+alias+"?format=json&h=index,shard,prirep,node", nil, &shards); err != nil {
		t.Fatal(err)
	}
	for _, s := range shards {
		if s.Shard != "0" || s.Prirep != "p" {
			continue
		}
		body := fmt.Appendf(nil, `{"commands":[{"cancel":{"index":%q,"shard":0,"node":%q,"allow_primary":true}}]}`, s.Index, s.Node)
		if err := osc.Do(ctx, http.MethodPost, "/_cluster/reroute", body, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "a new primary term on "+alias, func() bool {
		now, err := primaryTerms(ctx, osc, alias)
		return err == nil && !maps.Equal(now, before)
	})
	if err := osc.Do(ctx, http.MethodGet, "/_cluster/health/"+alias+"?wait_for_active_shards=all&timeout=30s", nil, nil); err != nil {
		t.Fatal(err)
	}
}
