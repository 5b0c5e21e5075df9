package catalog

import "slices"

// GeoPoint is a WGS84 coordinate in degrees.
type GeoPoint struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Shop is the parent document: one delivery shop. Money is in KRW.
type Shop struct {
	ID               int64    `json:"id"`
	Name             string   `json:"name"`
	Category         string   `json:"category"` // one of Categories()
	Location         GeoPoint `json:"location"`
	DeliveryRadiusKm float64  `json:"delivery_radius_km"`
	Open             bool     `json:"open"`
	DeliveryMinutes  int      `json:"delivery_minutes"` // estimated
	DeliveryFee      int      `json:"delivery_fee"`
	MinOrder         int      `json:"min_order"`
	Rating           float64  `json:"rating"` // 0..5, one decimal
	ReviewCount      int      `json:"review_count"`
	District         string   `json:"district"` // Seoul gu, e.g. 강남구
	Address          string   `json:"address"`
	Phone            string   `json:"phone"`
	Tags             []string `json:"tags"`
	OpenedOn         string   `json:"opened_on"` // YYYY-MM-DD
}

// Menu is a child document: one item a shop sells. Money is in KRW.
type Menu struct {
	ID          int64  `json:"id"`
	ShopID      int64  `json:"shop_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Price       int    `json:"price"`
	ExtraFee    int    `json:"extra_fee"` // delivery surcharge for this menu, often 0
	CookMinutes int    `json:"cook_minutes"`
	Popular     bool   `json:"popular"`
	SoldOut     bool   `json:"sold_out"`
}

// ShopState is the full current state of one shop aggregate: the shop, its
// menus sorted by menu id, and the aggregate version (0 = never seen).
// A deleted shop is kept as a tombstone (Deleted, Version, Shop.ID) so that
// stale events cannot bring it back.
type ShopState struct {
	Shop    Shop   `json:"shop"`
	Menus   []Menu `json:"menus"`
	Version int64  `json:"version"`
	Deleted bool   `json:"deleted"`
}

// Clone returns a deep copy that shares no slices with s.
func (s ShopState) Clone() ShopState {
	c := s
	c.Shop.Tags = slices.Clone(s.Shop.Tags)
	c.Menus = slices.Clone(s.Menus)
	return c
}

// Menu returns the menu with the given id, if the shop has it.
func (s *ShopState) Menu(id int64) (Menu, bool) {
	i, ok := s.menuIndex(id)
	if !ok {
		return Menu{}, false
	}
	return s.Menus[i], true
}

func (s *ShopState) menuIndex(id int64) (int, bool) {
	return slices.BinarySearchFunc(s.Menus, id, func(m Menu, id int64) int {
		switch {
		case m.ID < id:
			return -1
		case m.ID > id:
			return 1
		}
		return 0
	})
}

// MenuIDsPerShop is the id space reserved for one shop's menus: menu k of
// shop s has id s*MenuIDsPerShop + k, 0 <= k < MenuIDsPerShop.
const MenuIDsPerShop = 1000

// MenuID returns the id of menu k of a shop, as the generator assigns it.
func MenuID(shopID int64, k int) int64 { return shopID*MenuIDsPerShop + int64(k) }

// Categories returns the fixed list of shop categories, in display order.
func Categories() []string {
	out := make([]string, len(categorySpecs))
	for i := range categorySpecs {
		out[i] = categorySpecs[i].name
	}
	return out
}

func isCategory(name string) bool {
	for i := range categorySpecs {
		if categorySpecs[i].name == name {
			return true
		}
	}
	return false
}
