package catalog

import (
	"encoding/json"
)

// EntityType says what an event changes: the shop itself or one of its menus.
type EntityType string

const (
	EntityShop EntityType = "shop"
	EntityMenu EntityType = "menu"
)

// Op is what an event does.
type Op string

const (
	// OpUpsert creates the entity or sets some of its fields.
	OpUpsert Op = "upsert"
	// OpDelete deletes the entity (for a shop: the whole aggregate).
	OpDelete Op = "delete"
)

// Event is one change to a shop aggregate. Its JSON form is
//
//	{"type":"shop","id":123,"version":17,"op":"upsert","fields":{"delivery_minutes":35,"open":true}}
//	{"type":"menu","id":123045,"shop_id":123,"version":18,"op":"upsert","fields":{"price":15000}}
//	{"type":"shop","id":125,"version":9,"op":"delete"}
//
// Version is the aggregate version (see the package doc). Exactly one of
// Shop and Menu is set on an upsert, matching Type; both are nil on a delete.
// Menus, on a shop upsert only, replaces the shop's whole menu list; nil means
// "menus unchanged" and a non-nil empty slice means "no menus".
type Event struct {
	Type    EntityType
	ID      int64 // shop id for a shop event, menu id for a menu event
	ShopID  int64 // menu events only: the aggregate the menu belongs to
	Version int64
	Op      Op
	Shop    *ShopFields
	Menu    *MenuFields
	Menus   []Menu
}

// AggregateID returns the id of the shop aggregate the event belongs to.
func (ev Event) AggregateID() int64 {
	if ev.Type == EntityMenu {
		return ev.ShopID
	}
	return ev.ID
}

// IsHotShopUpdate reports whether ev is a shop upsert that sets only hot
// fields: the updates a split layout takes without touching its menu index.
func (ev Event) IsHotShopUpdate() bool {
	if ev.Type != EntityShop || ev.Op != OpUpsert || ev.Menus != nil {
		return false
	}
	for _, f := range ev.ChangedFields() {
		if v, _ := ShopFieldVolatility(f); v != Hot {
			return false
		}
	}
	return true
}

// ChangedFields returns the JSON names of the fields an upsert sets, in
// canonical order; nil for a delete. Look them up with ShopFieldVolatility or
// MenuFieldVolatility according to ev.Type.
func (ev Event) ChangedFields() []string {
	switch {
	case ev.Op != OpUpsert:
		return nil
	case ev.Type == EntityShop:
		return ev.Shop.Names()
	case ev.Type == EntityMenu:
		return ev.Menu.Names()
	}
	return nil
}

// UpsertEvent returns the full shop upsert that (re)creates this aggregate:
// every shop field plus the complete menu list, at the state's version. The
// initial load sends one of these per shop.
func (s ShopState) UpsertEvent() Event {
	menus := make([]Menu, len(s.Menus))
	copy(menus, s.Menus)
	return Event{
		Type: EntityShop, ID: s.Shop.ID, Version: s.Version, Op: OpUpsert,
		Shop: ShopFieldsFrom(s.Shop), Menus: menus,
	}
}

// ShopDeleteEvent returns the event that deletes a shop aggregate.
func ShopDeleteEvent(shopID, version int64) Event {
	return Event{Type: EntityShop, ID: shopID, Version: version, Op: OpDelete}
}

// MenuDeleteEvent returns the event that deletes one menu.
func MenuDeleteEvent(shopID, menuID, version int64) Event {
	return Event{Type: EntityMenu, ID: menuID, ShopID: shopID, Version: version, Op: OpDelete}
}

// ShopUpsertEvent returns a shop upsert that sets the given fields.
func ShopUpsertEvent(shopID, version int64, fields *ShopFields) Event {
	return Event{Type: EntityShop, ID: shopID, Version: version, Op: OpUpsert, Shop: fields}
}

// MenuUpsertEvent returns a menu upsert that sets the given fields.
func MenuUpsertEvent(shopID, menuID, version int64, fields *MenuFields) Event {
	return Event{Type: EntityMenu, ID: menuID, ShopID: shopID, Version: version, Op: OpUpsert, Menu: fields}
}

// eventJSON fixes the field order of the wire form.
type eventJSON struct {
	Type    EntityType `json:"type"`
	ID      int64      `json:"id"`
	ShopID  int64      `json:"shop_id,omitempty"`
	Version int64      `json:"version"`
	Op      Op         `json:"op"`
	Fields  any        `json:"fields,omitempty"`
	Menus   *[]Menu    `json:"menus,omitempty"`
}

// MarshalJSON writes the wire form shown on [Event].
func (ev Event) MarshalJSON() ([]byte, error) {
	out := eventJSON{Type: ev.Type, ID: ev.ID, ShopID: ev.ShopID, Version: ev.Version, Op: ev.Op}
	if ev.Shop != nil {
		out.Fields = ev.Shop
	} else if ev.Menu != nil {
		out.Fields = ev.Menu
	}
	if ev.Menus != nil {
		out.Menus = &ev.Menus
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes one event strictly: unknown keys, wrong value types
// and fields that do not belong to the event's type are errors naming the
// field. It does not check ranges; call Validate (ParseEvents does both).
func (ev *Event) UnmarshalJSON(data []byte) error {
	decoded, err := decodeEvent(data)
	if err != nil {
		return err
	}
	*ev = decoded
	return nil
}
