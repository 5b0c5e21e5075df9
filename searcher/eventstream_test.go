package searcher

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
)

// TestEventStreamsGiveEqualLayouts feeds one disordered event history
// (duplicates, menu and shop events of a shop reordered across each other,
// deletes and re-creates) through the real indexer into every layout, in
// batches of random sizes, with two simulated kills: one after a batch was
// written but before it was acknowledged, one between the menu-document and
// shop-document writes of a batch. Then every shop must equal the reference
// (the events applied one by one), and random searches, versions included,
// must be the same on every layout.
func TestEventStreamsGiveEqualLayouts(t *testing.T) {
	const numShops, updates = 150, 6000
	osc, idx := openIndex(t, stacktest.Require(t).OpenSearchURLs)
	ctx := context.Background()
	var events []catalog.Event
	for _, st := range catalog.NewGenerator(9).Shops(numShops) {
		events = append(events, st.UpsertEvent())
	}
	stream := catalog.NewEventStream(9, numShops)
	for range updates {
		events = append(events, stream.Next())
	}
	events = catalog.Disorder(events, 9, 0.1, 0.1, 20)

	reference := make(map[int64]*catalog.ShopState)
	for _, ev := range events {
		st := reference[ev.AggregateID()]
		if st == nil {
			st = new(catalog.ShopState)
			reference[ev.AggregateID()] = st
		}
		_, _ = st.Apply(ev)
	}
	ids := slices.Sorted(maps.Keys(reference))

	kinds := stacktest.Layouts(t, osc)
	for _, k := range kinds {
		cfg := indexer.Defaults()
		cfg.Layout = idx
		if err := idx.EnsureIndices(ctx, osc, k); err != nil {
			t.Fatal(err)
		}
		restart := func() *indexer.Indexer {
			ix, err := indexer.New(cfg, k, osc, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return ix
		}
		ix := restart()
		r := rand.New(rand.NewPCG(9, 1))
		for start, n := 0, 0; start < len(events); n++ {
			batch := events[start:min(len(events), start+1+r.IntN(300))]
			start += len(batch)
			switch n {
			case 5: // killed after the write, before the acknowledgement
				if _, err := ix.Apply(ctx, batch); err != nil {
					t.Fatal(err)
				}
				ix = restart()
			case 12: // killed between the two writes of the batch
				writeAllButHeads(t, osc, &idx, ix, batch)
				ix = restart()
			}
			if _, err := ix.Apply(ctx, batch); err != nil {
				t.Fatalf("%s: batch %d: %v", k, n, err)
			}
		}
		held, err := restart().Fetch(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			got, want := held[id].Aggregate(k), *reference[id]
			if want.Deleted || want.Version == 0 {
				// The hot layout keeps a deleted shop's head as a tombstone.
				tombstone := k == layout.Hot && want.Deleted && got.Deleted && got.Version == want.Version
				if got.Version != 0 && !tombstone {
					t.Fatalf("%s: shop %d should not exist, has version %d (deleted %v)", k, id, got.Version, got.Deleted)
				}
				continue
			}
			if diff := stateDiff(got, want); diff != "" {
				t.Fatalf("%s: shop %d differs from the reference: %s", k, id, diff)
			}
		}
		for _, alias := range idx.Aliases(k) {
			if err := osc.Do(ctx, http.MethodPost, "/"+alias+"/_refresh", nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}

	s := newSearcher(osc, idx, Defaults(), kinds)
	nonEmpty := 0
	for seed := range uint64(200) {
		req := randomRequest(seed)
		nested, err := s.Search(ctx, req, layout.Nested)
		if err != nil {
			t.Fatal(err)
		}
		split, err := s.Search(ctx, req, layout.Split)
		if err != nil {
			t.Fatal(err)
		}
		if diff := compare(nested, split); diff != "" {
			t.Fatalf("seed %d (%s): %s", seed, req.Encode().Encode(), diff)
		}
		if len(nested.Shops) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 50 {
		t.Errorf("only %d of 200 searches found shops", nonEmpty)
	}
}

// writeAllButHeads writes what the indexer's first bulk of a batch writes
// (every document but the heads), as a worker killed before its second bulk
// leaves the index.
func writeAllButHeads(t *testing.T, osc *osapi.Client, idx *layout.Config, ix *indexer.Indexer, batch []catalog.Event) {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for _, ev := range batch {
		if !slices.Contains(ids, ev.AggregateID()) {
			ids = append(ids, ev.AggregateID())
		}
	}
	held, err := ix.Fetch(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	c := indexer.CoalesceBatch(ix.Kind(), held, batch)
	var body bytes.Buffer
	for _, a := range c.Actions {
		if a.Part == indexer.HeadPart(ix.Kind()) {
			continue
		}
		line, err := indexer.AppendAction(nil, idx, a, &c.States[a.ShopID].Parts[a.Part])
		if err != nil {
			t.Fatal(err)
		}
		body.Write(line)
	}
	if body.Len() == 0 {
		return
	}
	if err := osc.DoContentType(ctx, http.MethodPost, "/_bulk", "application/x-ndjson", body.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
}

// stateDiff returns "" when two aggregates are equal, else the first
// difference: version, shop fields or a menu.
func stateDiff(got, want catalog.ShopState) string {
	switch {
	case got.Version != want.Version || got.Deleted != want.Deleted:
		return fmt.Sprintf("version %d deleted %v, want %d %v", got.Version, got.Deleted, want.Version, want.Deleted)
	case !reflect.DeepEqual(got.Shop, want.Shop):
		return fmt.Sprintf("shop fields %+v, want %+v", got.Shop, want.Shop)
	case len(got.Menus) != len(want.Menus):
		return fmt.Sprintf("%d menus, want %d", len(got.Menus), len(want.Menus))
	}
	for i := range got.Menus {
		if got.Menus[i] != want.Menus[i] {
			return fmt.Sprintf("menu %+v, want %+v", got.Menus[i], want.Menus[i])
		}
	}
	return ""
}
