package layout

import (
	"encoding/json"
	"slices"

	"github.com/baedal/baedal/catalog"
)

// ShopDoc is a shop's fields as indexed (the split shop index, and the top
// level of the nested document).
type ShopDoc struct {
	catalog.Shop
	Version int64 `json:"version"`
}

// MenuDoc is one nested menu. TotalFee and ETA exist in the nested layout only.
type MenuDoc struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	ShopName    string `json:"shop_name"`
	Price       int    `json:"price"`
	ExtraFee    int    `json:"extra_fee"`
	CookMinutes int    `json:"cook_minutes"`
	Popular     bool   `json:"popular"`
	SoldOut     bool   `json:"sold_out"`
	TotalFee    *int   `json:"total_fee,omitempty"`
	ETA         *int   `json:"eta,omitempty"`
}

// NestedDoc is the baseline document: the shop and all its menus.
type NestedDoc struct {
	ShopDoc
	Menus []MenuDoc `json:"menus"`
}

// MenusDoc is the split layout's menu document: one per shop, its menus
// nested, with copies of the cold shop fields in CopiedShopFields.
type MenusDoc struct {
	ID               int64            `json:"id"`
	Name             string           `json:"name"`
	Category         string           `json:"category"`
	Location         catalog.GeoPoint `json:"location"`
	DeliveryRadiusKm float64          `json:"delivery_radius_km"`
	Version          int64            `json:"version"`
	Menus            []MenuDoc        `json:"menus"`
}

// HotMenusDoc is the hot layout's menu document: every cold shop field, the
// aggregate version of its last rewrite, and the shop's menus nested. The hot
// fields live in the shop document and in the baedal-hot table only.
type HotMenusDoc struct {
	ID               int64            `json:"id"`
	Name             string           `json:"name"`
	Category         string           `json:"category"`
	Location         catalog.GeoPoint `json:"location"`
	DeliveryRadiusKm float64          `json:"delivery_radius_km"`
	MinOrder         int              `json:"min_order"`
	District         string           `json:"district"`
	Address          string           `json:"address"`
	Phone            string           `json:"phone"`
	Tags             []string         `json:"tags"`
	OpenedOn         string           `json:"opened_on"`
	Version          int64            `json:"version"`
	Menus            []MenuDoc        `json:"menus"`
}

// BuildHotMenus returns the hot layout's menu document.
func BuildHotMenus(st *catalog.ShopState, version int64) HotMenusDoc {
	s := &st.Shop
	return HotMenusDoc{
		ID: s.ID, Name: s.Name, Category: s.Category, Location: s.Location, DeliveryRadiusKm: s.DeliveryRadiusKm,
		MinOrder: s.MinOrder, District: s.District, Address: s.Address, Phone: s.Phone, Tags: s.Tags, OpenedOn: s.OpenedOn,
		Version: version, Menus: menuDocs(st, false),
	}
}

// StateFromHotMenus rebuilds the menu part (and the cold shop fields) of the
// aggregate from its hot-layout menu document.
func StateFromHotMenus(d HotMenusDoc) catalog.ShopState {
	st := catalog.ShopState{Version: d.Version, Shop: catalog.Shop{
		ID: d.ID, Name: d.Name, Category: d.Category, Location: d.Location, DeliveryRadiusKm: d.DeliveryRadiusKm,
		MinOrder: d.MinOrder, District: d.District, Address: d.Address, Phone: d.Phone, Tags: d.Tags, OpenedOn: d.OpenedOn,
	}}
	st.Menus = menusFromDocs(d.ID, d.Menus)
	return st
}

func menuDocs(st *catalog.ShopState, extended bool) []MenuDoc {
	out := make([]MenuDoc, len(st.Menus))
	for i, m := range st.Menus {
		out[i] = MenuDoc{
			ID: m.ID, Name: m.Name, Description: m.Description, ShopName: st.Shop.Name,
			Price: m.Price, ExtraFee: m.ExtraFee, CookMinutes: m.CookMinutes, Popular: m.Popular, SoldOut: m.SoldOut,
		}
		if extended {
			total := st.Shop.DeliveryFee + m.ExtraFee
			eta := st.Shop.DeliveryMinutes + m.CookMinutes
			out[i].TotalFee, out[i].ETA = &total, &eta
		}
	}
	return out
}

// BuildNested returns the nested document of a shop at a version.
func BuildNested(st *catalog.ShopState, version int64) NestedDoc {
	return NestedDoc{ShopDoc: BuildShop(st, version), Menus: menuDocs(st, true)}
}

// BuildShop returns the split shop document.
func BuildShop(st *catalog.ShopState, version int64) ShopDoc {
	return ShopDoc{Shop: st.Shop, Version: version}
}

// HotHeadTombstone is the hot layout's head document of a deleted shop: it
// stays in the shop-head index, so a restart keeps the delete's version and
// the plugin's table keeps it too (docs/hot-layout.md, "Tombstones").
type HotHeadTombstone struct {
	ID        int64  `json:"id"`
	Version   int64  `json:"version"`
	Deleted   bool   `json:"deleted"`
	DeletedAt string `json:"deleted_at"`
}

// HotHeadDoc is the hot layout's head document of a shop: its id, the
// aggregate's version and the hot shop fields (catalog.HotShopFields), what
// the baedal-hot plugin's table holds. The cold shop fields live in the
// menu document (HotMenusDoc), so a hot update writes a few numbers and
// indexes no keyword, date or location.
type HotHeadDoc struct {
	ID              int64   `json:"id"`
	Open            bool    `json:"open"`
	DeliveryMinutes int     `json:"delivery_minutes"`
	DeliveryFee     int     `json:"delivery_fee"`
	Rating          float64 `json:"rating"`
	ReviewCount     int     `json:"review_count"`
	Version         int64   `json:"version"`
}

// BuildHotHead returns the hot layout's head document of a shop at a
// version.
func BuildHotHead(st *catalog.ShopState, version int64) HotHeadDoc {
	s := &st.Shop
	return HotHeadDoc{
		ID: s.ID, Open: s.Open, DeliveryMinutes: s.DeliveryMinutes, DeliveryFee: s.DeliveryFee,
		Rating: s.Rating, ReviewCount: s.ReviewCount, Version: version,
	}
}

// WithHotFields returns shop with its hot fields taken from hot: the shop
// of the hot layout, whose cold fields come from the menu document and hot
// ones from the head.
func WithHotFields(shop, hot catalog.Shop) catalog.Shop {
	shop.Open, shop.DeliveryMinutes, shop.DeliveryFee = hot.Open, hot.DeliveryMinutes, hot.DeliveryFee
	shop.Rating, shop.ReviewCount = hot.Rating, hot.ReviewCount
	return shop
}

// StateFromHotHead rebuilds the head part of the hot layout from its
// document: the id, version and hot fields of a shop (heads written before
// the head held only those also carry cold fields; they are ignored), or a
// tombstone (deleted: true) at its version.
func StateFromHotHead(src []byte) (catalog.ShopState, error) {
	var d struct {
		HotHeadDoc
		Deleted bool `json:"deleted"`
	}
	if err := json.Unmarshal(src, &d); err != nil {
		return catalog.ShopState{}, err
	}
	if d.Deleted {
		return catalog.ShopState{Shop: catalog.Shop{ID: d.ID}, Version: d.Version, Deleted: true}, nil
	}
	return catalog.ShopState{Version: d.Version, Shop: WithHotFields(catalog.Shop{ID: d.ID}, catalog.Shop{
		Open: d.Open, DeliveryMinutes: d.DeliveryMinutes, DeliveryFee: d.DeliveryFee, Rating: d.Rating, ReviewCount: d.ReviewCount,
	})}, nil
}

// BuildMenus returns the split menu document.
func BuildMenus(st *catalog.ShopState, version int64) MenusDoc {
	return MenusDoc{
		ID: st.Shop.ID, Name: st.Shop.Name, Category: st.Shop.Category, Location: st.Shop.Location,
		DeliveryRadiusKm: st.Shop.DeliveryRadiusKm, Version: version, Menus: menuDocs(st, false),
	}
}

// StateFromNested rebuilds the aggregate from its nested document.
func StateFromNested(d NestedDoc) catalog.ShopState {
	st := catalog.ShopState{Shop: d.Shop, Version: d.Version}
	st.Menus = menusFromDocs(d.ID, d.Menus)
	return st
}

// StateFromShop rebuilds the shop part of the aggregate from its split shop
// document; menus are left empty.
func StateFromShop(d ShopDoc) catalog.ShopState {
	return catalog.ShopState{Shop: d.Shop, Version: d.Version}
}

// StateFromMenus rebuilds the menu part (and the copied shop fields) of the
// aggregate from its split menu document.
func StateFromMenus(d MenusDoc) catalog.ShopState {
	st := catalog.ShopState{Version: d.Version}
	st.Shop.ID, st.Shop.Name, st.Shop.Category = d.ID, d.Name, d.Category
	st.Shop.Location, st.Shop.DeliveryRadiusKm = d.Location, d.DeliveryRadiusKm
	st.Menus = menusFromDocs(d.ID, d.Menus)
	return st
}

func menusFromDocs(shopID int64, docs []MenuDoc) []catalog.Menu {
	out := make([]catalog.Menu, len(docs))
	for i, m := range docs {
		out[i] = catalog.Menu{ID: m.ID, ShopID: shopID, Name: m.Name, Description: m.Description, Price: m.Price,
			ExtraFee: m.ExtraFee, CookMinutes: m.CookMinutes, Popular: m.Popular, SoldOut: m.SoldOut}
	}
	return out
}

// SplitTouches says which split documents an event rewrites when it
// applies. The shop document is the head of the split layout: every applied
// event rewrites it, so its version is always the aggregate's (the version
// search reports, and the one a redelivered event is compared with). The
// menu document is rewritten only by what it holds: menus, the copied cold
// shop fields, and the creation or deletion of the shop. A hot shop field
// therefore touches only the shop document.
func SplitTouches(ev catalog.Event) (shopDoc, menusDoc bool) {
	if ev.Type == catalog.EntityMenu || ev.Op == catalog.OpDelete || ev.Menus != nil {
		return true, true
	}
	copied := CopiedShopFields()
	for _, f := range ev.ChangedFields() {
		if slices.Contains(copied, f) {
			return true, true
		}
	}
	return true, false
}

// HotTouches says which hot-layout documents an event rewrites when it
// applies: the shop document (the head) always; the menu document when the
// event changes what it holds: menus, any cold shop field, or the creation
// or deletion of the shop.
func HotTouches(ev catalog.Event) (shopDoc, menusDoc bool) {
	if ev.Type == catalog.EntityMenu || ev.Op == catalog.OpDelete || ev.Menus != nil {
		return true, true
	}
	for _, f := range ev.ChangedFields() {
		if v, _ := catalog.ShopFieldVolatility(f); v == catalog.Cold {
			return true, true
		}
	}
	return true, false
}
