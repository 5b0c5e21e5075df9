package indexer

import (
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/layout"
)

// Part is one document of a shop in a layout.
type Part int

// The parts: the nested layout has one, the split layout two.
const (
	PartNested Part = iota // the nested document (shop + menus)
	PartShop               // the split shop document
	PartMenus              // the split menu document
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
	}
	return layout.RoleNested
}

// LayoutParts returns the parts a layout writes, in write order.
func LayoutParts(k layout.Kind) []Part {
	if k == layout.Nested {
		return []Part{PartNested}
	}
	return []Part{PartMenus, PartShop}
}

// TouchedParts returns the parts an event rewrites in a layout.
func TouchedParts(k layout.Kind, ev catalog.Event) []Part {
	if k == layout.Nested {
		return []Part{PartNested}
	}
	shop, menus := layout.SplitTouches(ev)
	var out []Part
	if menus {
		out = append(out, PartMenus)
	}
	if shop {
		out = append(out, PartShop)
	}
	return out
}

// ShopParts is the held state of one shop in one layout: one catalog.ShopState
// per part (indexed by Part; unused parts stay zero). A part's Version is the
// version of the last event applied to it, which is also its document's
// external version; 0 means the document does not exist. The split shop part
// holds no menus; the split menus part holds only the copied shop fields.
//
// Held states are immutable once stored: CoalesceBatch copies a part before
// changing it.
type ShopParts struct {
	Parts [numParts]catalog.ShopState
}

// Version returns the aggregate version the held state reflects: the
// greatest part version.
func (sp *ShopParts) Version() int64 {
	var v int64
	for _, st := range sp.Parts {
		v = max(v, st.Version)
	}
	return v
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
	// appearance in the batch, parts in LayoutParts order.
	Actions []Action
	// Rejected lists events that failed validation or cannot be applied.
	Rejected []Rejection
	// Applied counts events that changed at least one part; Stale counts
	// duplicates and out-of-order events that changed none.
	Applied, Stale int
	// ShopEvents lists, per shop, the indexes of its events in the batch.
	ShopEvents map[int64][]int
}

// CoalesceBatch applies a batch of events, in order, to the held states of
// their shops and returns one write per document that changed. held must
// have an entry for every shop of the batch (a zero ShopParts for a shop
// without documents); it is not modified.
//
// An event goes only to the parts it touches (TouchedParts) and is applied
// with catalog.ShopState.Apply, so a part never goes back in version: a
// duplicate or an out-of-order event changes nothing. An event that fails
// validation or cannot be applied to a part (a partial upsert of a shop that
// does not exist, a menu event for a deleted shop) is rejected; in the split
// layout the menus part is tried first, so a rejection normally leaves both
// parts untouched (only if the two parts disagree on whether the shop exists
// can the menus part keep an event the shop part rejects).
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
	type dirtyKey struct {
		shop int64
		part Part
	}
	lastEvent := make(map[dirtyKey]int)
	copied := make(map[dirtyKey]bool)
	var order []int64
	for i, ev := range events {
		shopID := ev.AggregateID()
		sp, ok := out.States[shopID]
		if !ok {
			sp = new(ShopParts)
			if h := held[shopID]; h != nil {
				*sp = *h // shares part memory until a part is copied below
			}
			out.States[shopID] = sp
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
		changed := false
		for _, p := range TouchedParts(k, ev) {
			key := dirtyKey{shopID, p}
			if !copied[key] && ev.Version > sp.Parts[p].Version {
				sp.Parts[p] = sp.Parts[p].Clone()
				copied[key] = true
			}
			applied, err := sp.Parts[p].Apply(ev)
			if err != nil {
				out.Rejected = append(out.Rejected, Rejection{Event: i, ShopID: shopID, Reason: "cannot apply to the " + p.String() + " document: " + err.Error()})
				break
			}
			if applied {
				if p == PartShop {
					sp.Parts[p].Menus = nil // the shop document holds no menus
				}
				lastEvent[key] = i
				changed = true
			}
		}
		if changed {
			out.Applied++
		} else if len(out.Rejected) == 0 || out.Rejected[len(out.Rejected)-1].Event != i {
			out.Stale++
		}
	}
	for _, shopID := range order {
		sp := out.States[shopID]
		for _, p := range LayoutParts(k) {
			last, dirty := lastEvent[dirtyKey{shopID, p}]
			if !dirty {
				continue
			}
			st := &sp.Parts[p]
			out.Actions = append(out.Actions, Action{ShopID: shopID, Part: p, Delete: st.Deleted, Version: st.Version, LastEvent: last})
		}
	}
	return out
}
