package indexer

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/layout"
)

// disorderedHistory returns the initial load of numShops generated shops
// followed by a realistic event stream over them, delivered out of order and
// with duplicates. Few shops get many events each, so deletes, re-creates and
// menu creates and deletes meet reordered and duplicated events.
func disorderedHistory(seed uint64, numShops, updates int) []catalog.Event {
	var events []catalog.Event
	for _, st := range catalog.NewGenerator(seed).Shops(numShops) {
		events = append(events, st.UpsertEvent())
	}
	stream := catalog.NewEventStream(seed, numShops)
	for range updates {
		events = append(events, stream.Next())
	}
	return catalog.Disorder(events, seed, 0.1, 0.1, 20)
}

// referenceStates applies events one by one to one state per shop: what
// every layout must end with. Events that cannot be applied are skipped.
func referenceStates(events []catalog.Event) map[int64]*catalog.ShopState {
	out := make(map[int64]*catalog.ShopState)
	for _, ev := range events {
		st := out[ev.AggregateID()]
		if st == nil {
			st = new(catalog.ShopState)
			out[ev.AggregateID()] = st
		}
		_, _ = st.Apply(ev)
	}
	return out
}

// throughDocuments returns the parts as the indexer rebuilds them after a
// cache miss: each part's document built, encoded, decoded and turned back
// into a state, as Fetch does. A deleted part keeps its tombstone: _mget does
// not see it, but OpenSearch refuses older writes for index.gc_deletes (409),
// and the indexer then forgets the held state it wrongly rebuilt (the stack
// test TestEventStreamsGiveEqualLayouts exercises that path for real).
func throughDocuments(t *testing.T, k layout.Kind, sp *ShopParts) *ShopParts {
	t.Helper()
	out := new(ShopParts)
	for _, p := range LayoutParts(k) {
		st := &sp.Parts[p]
		if st.Version == 0 || st.Deleted {
			out.Parts[p] = *st
			continue
		}
		line, err := AppendAction(nil, &layout.Config{}, Action{ShopID: st.Shop.ID, Part: p, Version: st.Version}, st)
		if err != nil {
			t.Fatal(err)
		}
		doc := line[slices.Index(line, '\n')+1:]
		if out.Parts[p], err = stateFromSource(p, doc); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestLayoutsApplyTheSameEvents feeds disordered event histories, in batches
// of random sizes, to CoalesceBatch for every layout, forgetting held states
// at random (a cache miss or a restarted worker rebuilds them from the
// documents), and checks that each layout's aggregates equal the reference
// (events applied one by one) and that the layouts applied, skipped and
// rejected exactly the same events.
func TestLayoutsApplyTheSameEvents(t *testing.T) {
	for seed := range uint64(20) {
		events := disorderedHistory(seed, 25, 3000)
		want := referenceStates(events)
		type outcome struct {
			applied, stale int
			rejected       []int // event indexes in the whole history
		}
		got := map[layout.Kind]outcome{}
		for _, k := range layout.Kinds() {
			r := rand.New(rand.NewPCG(seed, 7))
			held := make(map[int64]*ShopParts)
			var o outcome
			for start := 0; start < len(events); {
				end := min(len(events), start+1+r.IntN(60))
				batch := events[start:end]
				for _, id := range slices.Sorted(maps.Keys(held)) {
					if r.IntN(10) == 0 {
						held[id] = throughDocuments(t, k, held[id])
					}
				}
				c := CoalesceBatch(k, held, batch)
				o.applied += c.Applied
				o.stale += c.Stale
				for _, rej := range c.Rejected {
					o.rejected = append(o.rejected, start+rej.Event)
				}
				for _, a := range c.Actions {
					if a.Version != c.States[a.ShopID].Parts[a.Part].Version {
						t.Fatalf("seed %d %s: action %+v at another version than its part", seed, k, a)
					}
				}
				for id, sp := range c.States {
					held[id] = sp
				}
				start = end
			}
			got[k] = o
			for id, sp := range held {
				agg := sp.Aggregate(k)
				ref := *want[id]
				if ref.Deleted != agg.Deleted || ref.Version != agg.Version || (!ref.Deleted && !sameState(ref, agg)) {
					t.Fatalf("seed %d %s: shop %d is %s, want %s", seed, k, id, stateJSON(agg), stateJSON(ref))
				}
				if head := sp.Parts[HeadPart(k)]; !agg.Deleted && agg.Version > 0 && head.Version != agg.Version {
					t.Fatalf("seed %d %s: head document of shop %d at version %d, aggregate at %d", seed, k, id, head.Version, agg.Version)
				}
			}
		}
		for _, k := range layout.Kinds() {
			if !reflect.DeepEqual(got[layout.Nested], got[k]) {
				t.Fatalf("seed %d: nested applied/stale/rejected %+v, %s %+v", seed, got[layout.Nested], k, got[k])
			}
		}
		if seed == 0 {
			t.Logf("seed 0: %d events, %d applied, %d stale, %d rejected", len(events), got[layout.Nested].applied, got[layout.Nested].stale, len(got[layout.Nested].rejected))
		}
	}
}

// TestCrossEntityReorderingIsStaleInEveryLayout pins the two cases a user
// found: an older shop event after a newer menu event, and an older menu
// event after a newer shop event, are dropped by every layout.
func TestCrossEntityReorderingIsStaleInEveryLayout(t *testing.T) {
	shop := catalog.NewGenerator(3).Shop(0)
	menu := shop.Menus[0].ID
	cases := map[string][]catalog.Event{
		"menu v5 then shop v4": {priceEvent(1, menu, 5, 12000), hotEvent(1, 4, 44)},
		"shop v7 then menu v6": {hotEvent(1, 7, 77), priceEvent(1, menu, 6, 13000)},
	}
	for name, events := range cases {
		for _, k := range layout.Kinds() {
			c := CoalesceBatch(k, map[int64]*ShopParts{1: heldShop(k, shop)}, events)
			if c.Applied != 1 || c.Stale != 1 {
				t.Errorf("%s, %s: applied %d stale %d, want 1 and 1", name, k, c.Applied, c.Stale)
			}
			agg := c.States[1].Aggregate(k)
			if agg.Shop.DeliveryMinutes == 44 || agg.Menus[0].Price == 13000 {
				t.Errorf("%s, %s: the older event was applied: %s", name, k, stateJSON(agg))
			}
		}
	}
}

func sameState(a, b catalog.ShopState) bool {
	if len(a.Menus) == 0 && len(b.Menus) == 0 {
		a.Menus, b.Menus = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func stateJSON(st catalog.ShopState) string {
	b, _ := json.Marshal(st)
	return string(b)
}
