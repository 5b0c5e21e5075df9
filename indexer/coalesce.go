package indexer

import (
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/layout"
)

// Part is one document of a shop in a layout.
type Part int

// The parts: the nested layout has one, the split and hot layouts two each.
const (
	PartNested   Part = iota // the nested document (shop + menus)
	PartShop                 // the split shop document
	PartMenus                // the split menu document
	PartHotShop              // the hot layout's shop document
	PartHotMenus             // the hot layout's menu document (cold shop fields + menus)
	numParts
)

func (p Part) String() string {
	switch p {
	case PartNested:
		return "nested"
	case PartShop:
		return "shop"
	case PartMenus:
		return "menus"
	case PartHotShop:
		return "hot shop"
	case PartHotMenus:
		return "hot menus"
	}
	return "unknown"
}

// Role returns the layout index role the part is written to.
func (p Part) Role() string {
	switch p {
	case PartShop:
		return layout.RoleShops
	case PartMenus:
		return layout.RoleMenus
	case PartHotShop:
		return layout.RoleHotShops
	case PartHotMenus:
		return layout.RoleHotMenus
	}
	return layout.RoleNested
}

// LayoutParts returns the parts a layout writes, in write order: the head
// (HeadPart) last.
func LayoutParts(k layout.Kind) []Part {
	switch k {
	case layout.Nested:
		return []Part{PartNested}
	case layout.Hot:
		return []Part{PartHotMenus, PartHotShop}
	}
	return []Part{PartMenus, PartShop}
}

// TouchedParts returns the parts an event rewrites in a layout when it
// applies.
func TouchedParts(k layout.Kind, ev catalog.Event) []Part {
	var shop, menus bool
	switch k {
	case layout.Nested:
		return []Part{PartNested}
	case layout.Hot:
		shop, menus = layout.HotTouches(ev)
	default:
		shop, menus = layout.SplitTouches(ev)
	}
	parts := LayoutParts(k) // [menus, shop]
	var out []Part
	if menus {
		out = append(out, parts[0])
	}
	if shop {
		out = append(out, parts[1])
	}
	return out
}

// HeadPart returns the part whose version is the aggregate's: the nested
// document, or the shop document of the split and hot layouts. Every applied
// event rewrites it, and the indexer writes it after every other part of a
// batch, so a head at version v means every part reflects every event up to v.
func HeadPart(k layout.Kind) Part {
	parts := LayoutParts(k)
	return parts[len(parts)-1]
}

// ShopParts is the held state of one shop in one layout: one catalog.ShopState
// per part (indexed by Part; unused parts stay zero). A part's Version is the
// version of the last event applied to it, which is also its document's
// external version; 0 means the document does not exist. The split shop part
// holds no menus; the split menus part holds the menus (and may hold only the
// copied shop fields).
//
// Held states are immutable once stored: CoalesceBatch builds new parts.
type ShopParts struct {
	Parts [numParts]catalog.ShopState
}

// Version returns the aggregate version the held state reflects: the version
// of its head part (a ShopParts holds the parts of one layout, so at most one
// head is set).
func (sp *ShopParts) Version() int64 {
	return max(sp.Parts[PartNested].Version, sp.Parts[PartShop].Version, sp.Parts[PartHotShop].Version)
}

// Aggregate returns a copy of the shop aggregate the parts of layout k hold:
// the version, existence and shop fields of the head part, and the menus of
// the menus part. In the hot layout the head holds only the hot shop fields
// (layout.HotHeadDoc) and the cold ones come from the menus part. It shares
// no memory with sp.
func (sp *ShopParts) Aggregate(k layout.Kind) catalog.ShopState {
	if sp == nil {
		return catalog.ShopState{}
	}
	head := sp.Parts[HeadPart(k)]
	if k == layout.Nested || head.Version == 0 || head.Deleted {
		return head.Clone()
	}
	agg := head.Clone()
	menus := sp.Parts[LayoutParts(k)[0]].Clone()
	if k == layout.Hot {
		agg.Shop = layout.WithHotFields(menus.Shop, head.Shop)
		agg.Shop.ID = head.Shop.ID
	}
	agg.Menus = menus.Menus
	if agg.Menus == nil {
		agg.Menus = []catalog.Menu{}
	}
	return agg
}

// project returns the state of part p of the aggregate at version v.
func project(p Part, agg *catalog.ShopState, v int64) catalog.ShopState {
	st := *agg
	st.Version = v
	if p == PartShop || p == PartHotShop {
		st.Menus = nil // the shop document holds no menus
	}
	return st
}

// Action is one document write of a batch: the full document of a part at
// the version of the last event applied to it, or its delete.
type Action struct {
	ShopID    int64
	Part      Part
	Delete    bool
	Version   int64
	LastEvent int // index in the batch of the last event applied to the part
}

// Rejection is an event of a batch that cannot be applied (dead-letter it).
type Rejection struct {
	Event  int // index in the batch
	ShopID int64
	Reason string
}

// Coalesced is what CoalesceBatch computed.
type Coalesced struct {
	// States holds the new state of every shop of the batch; parts the batch
	// did not change share memory with the held state.
	States map[int64]*ShopParts
	// Actions holds one write per dirty document, shops in order of first
	// appearance in the batch, parts in LayoutParts order (the head last).
	Actions []Action
	// Rejected lists events that failed validation or cannot be applied.
	Rejected []Rejection
	// Applied counts events that changed the aggregate; Stale counts
	// duplicates and out-of-order events that changed nothing.
	Applied, Stale int
	// ShopEvents lists, per shop, the indexes of its events in the batch.
	ShopEvents map[int64][]int
}

// CoalesceBatch applies a batch of events, in order, to the held states of
// their shops and returns one write per document that changed. held must
// have an entry for every shop of the batch (nil or a zero ShopParts for a
// shop without documents); it is not modified.
//
// Every layout decides alike (the version model, docs/search.md): an event is
// applied with catalog.ShopState.Apply to the shop's aggregate (Aggregate),
// so it applies iff its version is greater than the aggregate's and it is
// valid for the aggregate's state, whatever its entity type. A duplicate or
// out-of-order event changes nothing; one that cannot be applied (a partial
// upsert of a shop that does not exist, a menu event for a deleted shop) is
// rejected. An applied event marks the parts it touches (TouchedParts) dirty,
// and each dirty part is written once, as the projection of the final
// aggregate at the version of the last event that touched it.
//
// A valid event older than a delete of its shop in the same batch is
// superseded: the delete wipes whatever it would have changed, so it counts
// as stale and is not applied. This is what makes a redelivered batch safe
// when the first delivery was written but not acknowledged (the worker was
// killed in between): if that batch deleted a shop, the shop's document is
// gone, and its earlier partial updates, replayed on no document, would
// otherwise fail as updates of a shop that does not exist.
func CoalesceBatch(k layout.Kind, held map[int64]*ShopParts, events []catalog.Event) Coalesced {
	out := Coalesced{States: make(map[int64]*ShopParts), ShopEvents: make(map[int64][]int)}
	deletedAt := make(map[int64]int64) // the newest valid delete of each shop in the batch
	for _, ev := range events {
		if ev.Type == catalog.EntityShop && ev.Op == catalog.OpDelete && ev.Validate() == nil {
			deletedAt[ev.AggregateID()] = max(deletedAt[ev.AggregateID()], ev.Version)
		}
	}
	type shopWork struct {
		agg       catalog.ShopState
		dirty     [numParts]bool
		lastEvent [numParts]int
	}
	work := make(map[int64]*shopWork)
	var order []int64
	for i, ev := range events {
		shopID := ev.AggregateID()
		w, ok := work[shopID]
		if !ok {
			w = &shopWork{agg: held[shopID].Aggregate(k)}
			work[shopID] = w
			order = append(order, shopID)
		}
		out.ShopEvents[shopID] = append(out.ShopEvents[shopID], i)
		if err := ev.Validate(); err != nil {
			out.Rejected = append(out.Rejected, Rejection{Event: i, ShopID: shopID, Reason: "invalid event: " + err.Error()})
			continue
		}
		if ev.Version < deletedAt[shopID] {
			out.Stale++ // superseded by the delete
			continue
		}
		applied, err := w.agg.Apply(ev)
		switch {
		case err != nil:
			out.Rejected = append(out.Rejected, Rejection{Event: i, ShopID: shopID, Reason: "cannot apply: " + err.Error()})
		case !applied:
			out.Stale++
		default:
			out.Applied++
			for _, p := range TouchedParts(k, ev) {
				w.dirty[p], w.lastEvent[p] = true, i
			}
		}
	}
	for _, shopID := range order {
		w := work[shopID]
		sp := new(ShopParts)
		if h := held[shopID]; h != nil {
			*sp = *h // shares the memory of the parts not rewritten below
		}
		for _, p := range LayoutParts(k) {
			if !w.dirty[p] {
				continue
			}
			v := events[w.lastEvent[p]].Version
			sp.Parts[p] = project(p, &w.agg, v)
			out.Actions = append(out.Actions, Action{ShopID: shopID, Part: p, Delete: w.agg.Deleted, Version: v, LastEvent: w.lastEvent[p]})
		}
		out.States[shopID] = sp
	}
	return out
}
