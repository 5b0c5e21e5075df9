package indexer

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/layout"
)

func hotEvent(shopID, version int64, minutes int) catalog.Event {
	return catalog.ShopUpsertEvent(shopID, version, &catalog.ShopFields{DeliveryMinutes: &minutes})
}

func priceEvent(shopID, menuID, version int64, price int) catalog.Event {
	return catalog.MenuUpsertEvent(shopID, menuID, version, &catalog.MenuFields{Price: &price})
}

func nameEvent(shopID, version int64, name string) catalog.Event {
	return catalog.ShopUpsertEvent(shopID, version, &catalog.ShopFields{Name: &name})
}

// heldShop returns the held parts of a generated shop at version v in layout k.
func heldShop(k layout.Kind, st catalog.ShopState) *ShopParts {
	sp := new(ShopParts)
	for _, p := range LayoutParts(k) {
		part := st.Clone()
		if p == PartShop || p == PartHotShop {
			part.Menus = nil
		}
		sp.Parts[p] = part
	}
	return sp
}

func TestCoalesceBatch(t *testing.T) {
	gen := catalog.NewGenerator(3)
	shop1, shop2 := gen.Shop(0), gen.Shop(1) // ids 1 and 2, version 1
	menu1 := shop1.Menus[0].ID
	type wantAction struct {
		shop    int64
		part    Part
		version int64
		delete  bool
	}
	cases := []struct {
		name          string
		kind          layout.Kind
		held          map[int64]*ShopParts
		events        []catalog.Event
		want          []wantAction
		applied       int
		stale         int
		rejected      []int // event indexes
		checkMinutes  int64 // shop whose shop-part delivery_minutes is checked
		wantMinutes   int
		rejectContain string
	}{
		{
			name:   "nested: three hot events of one shop give one write at the last version",
			kind:   layout.Nested,
			held:   map[int64]*ShopParts{1: heldShop(layout.Nested, shop1)},
			events: []catalog.Event{hotEvent(1, 2, 20), hotEvent(1, 3, 25), hotEvent(1, 4, 30)},
			want:   []wantAction{{1, PartNested, 4, false}}, applied: 3,
			checkMinutes: 1, wantMinutes: 30,
		},
		{
			name:   "split: hot events write only the shop document",
			kind:   layout.Split,
			held:   map[int64]*ShopParts{1: heldShop(layout.Split, shop1)},
			events: []catalog.Event{hotEvent(1, 2, 20), hotEvent(1, 3, 25)},
			want:   []wantAction{{1, PartShop, 3, false}}, applied: 2,
			checkMinutes: 1, wantMinutes: 25,
		},
		{
			name:   "split: each part gets the version of the last event applied to it",
			kind:   layout.Split,
			held:   map[int64]*ShopParts{1: heldShop(layout.Split, shop1)},
			events: []catalog.Event{hotEvent(1, 2, 20), priceEvent(1, menu1, 3, 9000), hotEvent(1, 4, 44)},
			want:   []wantAction{{1, PartMenus, 3, false}, {1, PartShop, 4, false}}, applied: 3,
			checkMinutes: 1, wantMinutes: 44,
		},
		{
			name:   "split: a copied cold field rewrites both documents",
			kind:   layout.Split,
			held:   map[int64]*ShopParts{1: heldShop(layout.Split, shop1)},
			events: []catalog.Event{nameEvent(1, 2, "새이름치킨")},
			want:   []wantAction{{1, PartMenus, 2, false}, {1, PartShop, 2, false}}, applied: 1,
		},
		{
			name:   "duplicates and out-of-order events never make a document older",
			kind:   layout.Nested,
			held:   map[int64]*ShopParts{1: heldShop(layout.Nested, shop1)},
			events: []catalog.Event{hotEvent(1, 5, 50), hotEvent(1, 5, 51), hotEvent(1, 3, 33), hotEvent(1, 1, 11)},
			want:   []wantAction{{1, PartNested, 5, false}}, applied: 1, stale: 3,
			checkMinutes: 1, wantMinutes: 50,
		},
		{
			name:   "an all-stale batch writes nothing",
			kind:   layout.Split,
			held:   map[int64]*ShopParts{1: heldShop(layout.Split, shop1)},
			events: []catalog.Event{hotEvent(1, 1, 12)},
			stale:  1,
		},
		{
			name: "shops keep the order of first appearance",
			kind: layout.Nested,
			held: map[int64]*ShopParts{1: heldShop(layout.Nested, shop1), 2: heldShop(layout.Nested, shop2)},
			events: []catalog.Event{
				hotEvent(2, 2, 20), hotEvent(1, 2, 21), hotEvent(2, 3, 22),
			},
			want: []wantAction{{2, PartNested, 3, false}, {1, PartNested, 2, false}}, applied: 3,
		},
		{
			name:   "a shop delete after updates is one delete in each split document",
			kind:   layout.Split,
			held:   map[int64]*ShopParts{1: heldShop(layout.Split, shop1)},
			events: []catalog.Event{hotEvent(1, 2, 20), catalog.ShopDeleteEvent(1, 3)},
			want:   []wantAction{{1, PartMenus, 3, true}, {1, PartShop, 3, true}}, applied: 1, stale: 1,
		},
		{
			// The batch was written, then the worker was killed before the
			// acknowledgement: the delete removed the document, so the
			// redelivered batch finds none.
			name: "a redelivered batch that deleted its shop: the updates before the delete are superseded, not rejected",
			kind: layout.Nested,
			held: map[int64]*ShopParts{9: {}},
			events: []catalog.Event{hotEvent(9, 2, 20), priceEvent(9, 9001, 3, 1000), catalog.ShopDeleteEvent(9, 4),
				hotEvent(9, 3, 30)},
			want:    []wantAction{{9, PartNested, 4, true}},
			applied: 1, stale: 3,
		},
		{
			name:     "split: an update newer than the batch's delete is still applied to the deleted shop",
			kind:     layout.Split,
			held:     map[int64]*ShopParts{1: heldShop(layout.Split, shop1)},
			events:   []catalog.Event{catalog.ShopDeleteEvent(1, 3), hotEvent(1, 4, 40)},
			want:     []wantAction{{1, PartMenus, 3, true}, {1, PartShop, 3, true}},
			applied:  1,
			rejected: []int{1}, rejectContain: "new shop needs every field",
		},
		{
			name:   "a partial upsert of an unknown shop is rejected, the rest applies",
			kind:   layout.Nested,
			held:   map[int64]*ShopParts{1: heldShop(layout.Nested, shop1), 9: {}},
			events: []catalog.Event{hotEvent(9, 2, 20), hotEvent(1, 2, 22)},
			want:   []wantAction{{1, PartNested, 2, false}}, applied: 1,
			rejected: []int{0}, rejectContain: "new shop needs every field",
		},
		{
			name:     "split: a menu event for an unknown shop is rejected",
			kind:     layout.Split,
			held:     map[int64]*ShopParts{9: {}},
			events:   []catalog.Event{priceEvent(9, 9001, 2, 1000)},
			rejected: []int{0}, rejectContain: "shop does not exist",
		},
		{
			name:     "an invalid event is rejected with the field",
			kind:     layout.Nested,
			held:     map[int64]*ShopParts{1: heldShop(layout.Nested, shop1)},
			events:   []catalog.Event{{Type: "shoop", ID: 1, Version: 2, Op: catalog.OpUpsert}},
			rejected: []int{0}, rejectContain: `field "type"`,
		},
		{
			name: "a full upsert creates a shop without documents",
			kind: layout.Split,
			held: map[int64]*ShopParts{2: {}},
			events: func() []catalog.Event {
				st := shop2
				return []catalog.Event{st.UpsertEvent(), hotEvent(2, 2, 61)}
			}(),
			want:    []wantAction{{2, PartMenus, 1, false}, {2, PartShop, 2, false}},
			applied: 2, checkMinutes: 2, wantMinutes: 61,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := map[int64]int64{}
			for id, sp := range tc.held {
				before[id] = sp.Version()
			}
			c := CoalesceBatch(tc.kind, tc.held, tc.events)
			if len(c.Actions) != len(tc.want) {
				t.Fatalf("actions = %+v, want %+v", c.Actions, tc.want)
			}
			for i, w := range tc.want {
				a := c.Actions[i]
				if a.ShopID != w.shop || a.Part != w.part || a.Version != w.version || a.Delete != w.delete {
					t.Errorf("action %d = %+v, want %+v", i, a, w)
				}
			}
			if c.Applied != tc.applied || c.Stale != tc.stale {
				t.Errorf("applied %d stale %d, want %d %d", c.Applied, c.Stale, tc.applied, tc.stale)
			}
			if len(c.Rejected) != len(tc.rejected) {
				t.Fatalf("rejected = %+v, want events %v", c.Rejected, tc.rejected)
			}
			for i, r := range c.Rejected {
				if r.Event != tc.rejected[i] || !strings.Contains(r.Reason, tc.rejectContain) {
					t.Errorf("rejection %+v, want event %d with %q", r, tc.rejected[i], tc.rejectContain)
				}
			}
			if tc.checkMinutes != 0 {
				p := PartNested
				if tc.kind == layout.Split {
					p = PartShop
				}
				if got := c.States[tc.checkMinutes].Parts[p].Shop.DeliveryMinutes; got != tc.wantMinutes {
					t.Errorf("delivery_minutes = %d, want %d", got, tc.wantMinutes)
				}
			}
			for id, sp := range tc.held {
				if sp.Version() != before[id] {
					t.Errorf("held state of shop %d changed: version %d → %d", id, before[id], sp.Version())
				}
			}
		})
	}
}

func TestCoalesceBatchDoesNotModifyHeldMenus(t *testing.T) {
	st := catalog.NewGenerator(5).Shop(0)
	held := map[int64]*ShopParts{1: heldShop(layout.Split, st)}
	oldPrice := held[1].Parts[PartMenus].Menus[0].Price
	c := CoalesceBatch(layout.Split, held, []catalog.Event{priceEvent(1, st.Menus[0].ID, 2, oldPrice+500)})
	if held[1].Parts[PartMenus].Menus[0].Price != oldPrice {
		t.Fatalf("held menu price changed to %d", held[1].Parts[PartMenus].Menus[0].Price)
	}
	if got := c.States[1].Parts[PartMenus].Menus[0].Price; got != oldPrice+500 {
		t.Fatalf("new price = %d, want %d", got, oldPrice+500)
	}
}

func TestAppendActionIsExternallyVersioned(t *testing.T) {
	st := catalog.NewGenerator(5).Shop(0)
	cfg := layout.Defaults()
	line, err := AppendAction(nil, &cfg, Action{ShopID: 1, Part: PartShop, Version: 7}, &st)
	if err != nil {
		t.Fatal(err)
	}
	head, doc, _ := strings.Cut(string(line), "\n")
	if head != `{"index":{"_index":"baedal_shops","_id":"1","version":7,"version_type":"external"}}` {
		t.Errorf("action line = %s", head)
	}
	if !strings.Contains(doc, `"version":7`) || strings.Contains(doc, `"menus"`) {
		t.Errorf("shop document = %s", doc)
	}
	del, _ := AppendAction(nil, &cfg, Action{ShopID: 1, Part: PartMenus, Version: 8, Delete: true}, &st)
	if string(del) != `{"delete":{"_index":"baedal_menus","_id":"1","version":8,"version_type":"external"}}`+"\n" {
		t.Errorf("delete line = %s", del)
	}
}

// TestMgetFailuresAreNotMissingShops: an _mget document with an error (its
// shard had no copy, a node being down) fails the read instead of passing for
// a shop that does not exist, whose partial updates would be dead-lettered.
func TestMgetFailuresAreNotMissingShops(t *testing.T) {
	ok := []mgetDoc{{ID: "1", Found: true, Source: json.RawMessage(`{}`)}, {ID: "2", Found: false}}
	if err := mgetFailures("a", ok); err != nil {
		t.Errorf("found and not-found documents: %v", err)
	}
	var resp struct {
		Docs []mgetDoc `json:"docs"`
	}
	raw := `{"docs":[{"_index":"a","_id":"1","found":true,"_source":{}},{"_index":"a","_id":"7","error":{"type":"no_shard_available_action_exception","reason":"No shard available for [get [a][7]]"}}]}`
	if err := json.Unmarshal([]byte(raw), &resp); err != nil {
		t.Fatal(err)
	}
	err := mgetFailures("a", resp.Docs)
	if !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "shop 7") {
		t.Errorf("a document with an error: %v, want ErrShardUnavailable naming shop 7", err)
	}
}
