package catalog

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits checked by Validate. Text caps are in bytes (a Hangul syllable is 3).
const (
	MaxNameBytes        = 300
	MaxDescriptionBytes = 2000
	MaxAddressBytes     = 500
	MaxDistrictBytes    = 100
	MaxPhoneBytes       = 32
	MaxTags             = 32
	MaxTagBytes         = 100
	MaxMenusPerShop     = MenuIDsPerShop
	MaxDeliveryMinutes  = 24 * 60
	MaxCookMinutes      = 24 * 60
	MaxFee              = 1_000_000  // delivery_fee, extra_fee
	MaxMoney            = 10_000_000 // min_order, price
	MaxReviewCount      = 1_000_000_000
	MaxDeliveryRadiusKm = 100
	MaxRating           = 5
	// MaxShopID is the largest shop id: menu k of shop s has id
	// s*MenuIDsPerShop+k (MenuID), which must fit in an int64. An id above
	// it can only be a client's mistake, refused before it reaches the log.
	MaxShopID = math.MaxInt64/MenuIDsPerShop - 1
)

// Validate checks an event: enums, ids, version, which parts an event of
// this type and op may carry, and the value range of every field it sets.
// Errors are *FieldError (errors.Is(err, ErrInvalidEvent)).
func (ev Event) Validate() error {
	switch ev.Type {
	case EntityShop, EntityMenu:
	default:
		return fieldErr("type", "got "+quoteShort(string(ev.Type))+", allowed: shop, menu")
	}
	switch ev.Op {
	case OpUpsert, OpDelete:
	default:
		return fieldErr("op", "got "+quoteShort(string(ev.Op))+", allowed: upsert, delete")
	}
	if ev.ID < 1 {
		return fieldErrf("id", "got %d, want an integer >= 1", ev.ID)
	}
	if ev.Type == EntityShop && ev.ID > MaxShopID {
		return fieldErrf("id", "got %d, want a shop id in 1..%d", ev.ID, int64(MaxShopID))
	}
	if ev.Version < 1 {
		return fieldErrf("version", "got %d, want an integer >= 1", ev.Version)
	}
	if ev.Type == EntityShop {
		return ev.validateShopEvent()
	}
	return ev.validateMenuEvent()
}

func (ev Event) validateShopEvent() error {
	if ev.ShopID != 0 && ev.ShopID != ev.ID {
		return fieldErrf("shop_id", "got %d on a shop event, want it absent or equal to id %d", ev.ShopID, ev.ID)
	}
	if ev.Menu != nil {
		return fieldErr("fields", "menu fields on a shop event")
	}
	if ev.Op == OpDelete {
		if ev.Shop != nil {
			return fieldErr("fields", "not allowed on a delete")
		}
		if ev.Menus != nil {
			return fieldErr("menus", "not allowed on a delete")
		}
		return nil
	}
	if ev.Shop == nil || len(ev.Shop.Names()) == 0 {
		return fieldErr("fields", "required: a shop upsert sets at least one field")
	}
	if err := ev.Shop.validate("fields."); err != nil {
		return err
	}
	if ev.Menus == nil {
		return nil
	}
	if missing := ev.Shop.Missing(); len(missing) > 0 {
		return fieldErr("menus", "allowed only on a full shop upsert; fields lacks: "+strings.Join(missing, ", "))
	}
	return validateMenuList(ev.ID, ev.Menus)
}

func (ev Event) validateMenuEvent() error {
	if ev.ShopID < 1 || ev.ShopID > MaxShopID {
		return fieldErrf("shop_id", "got %d, want a shop id in 1..%d (required on a menu event)", ev.ShopID, int64(MaxShopID))
	}
	if ev.Shop != nil {
		return fieldErr("fields", "shop fields on a menu event")
	}
	if ev.Menus != nil {
		return fieldErr("menus", "allowed only on a shop upsert")
	}
	if ev.Op == OpDelete {
		if ev.Menu != nil {
			return fieldErr("fields", "not allowed on a delete")
		}
		return nil
	}
	if ev.Menu == nil || len(ev.Menu.Names()) == 0 {
		return fieldErr("fields", "required: a menu upsert sets at least one field")
	}
	return ev.Menu.validate("fields.")
}

func validateMenuList(shopID int64, menus []Menu) error {
	if len(menus) > MaxMenusPerShop {
		return fieldErrf("menus", "got %d menus, want at most %d", len(menus), MaxMenusPerShop)
	}
	for i := range menus {
		m := &menus[i]
		prefix := "menus[" + strconv.Itoa(i) + "]."
		if m.ID < 1 {
			return fieldErrf(prefix+"id", "got %d, want an integer >= 1", m.ID)
		}
		if m.ShopID != shopID {
			return fieldErrf(prefix+"shop_id", "got %d, want the event id %d", m.ShopID, shopID)
		}
		if err := validateMenuValues(prefix, m); err != nil {
			return err
		}
	}
	sorted := slices.IsSortedFunc(menus, func(a, b Menu) int { return cmpInt64(a.ID, b.ID) })
	ids := make([]int64, len(menus))
	for i := range menus {
		ids[i] = menus[i].ID
	}
	if !sorted {
		slices.Sort(ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return fieldErrf("menus", "menu id %d appears twice", ids[i])
		}
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (f *ShopFields) validate(prefix string) error {
	if f.Name != nil {
		if p := checkText(*f.Name, 1, MaxNameBytes); p != "" {
			return fieldErr(prefix+"name", p)
		}
	}
	if f.Category != nil && !isCategory(*f.Category) {
		return fieldErr(prefix+"category", "got "+quoteShort(*f.Category)+", allowed: "+strings.Join(Categories(), ", "))
	}
	if f.Location != nil {
		if p := checkFloat(f.Location.Lat, -90, 90); p != "" {
			return fieldErr(prefix+"location.lat", p)
		}
		if p := checkFloat(f.Location.Lon, -180, 180); p != "" {
			return fieldErr(prefix+"location.lon", p)
		}
	}
	if f.DeliveryRadiusKm != nil {
		v := *f.DeliveryRadiusKm
		if p := checkFloat(v, 0, MaxDeliveryRadiusKm); p != "" || v == 0 {
			return fieldErrf(prefix+"delivery_radius_km", "got %s, want more than 0 and at most %d", formatFloat(v), MaxDeliveryRadiusKm)
		}
	}
	if f.DeliveryMinutes != nil {
		if p := checkInt(*f.DeliveryMinutes, 0, MaxDeliveryMinutes); p != "" {
			return fieldErr(prefix+"delivery_minutes", p)
		}
	}
	if f.DeliveryFee != nil {
		if p := checkInt(*f.DeliveryFee, 0, MaxFee); p != "" {
			return fieldErr(prefix+"delivery_fee", p)
		}
	}
	if f.MinOrder != nil {
		if p := checkInt(*f.MinOrder, 0, MaxMoney); p != "" {
			return fieldErr(prefix+"min_order", p)
		}
	}
	if f.Rating != nil {
		if p := checkFloat(*f.Rating, 0, MaxRating); p != "" {
			return fieldErr(prefix+"rating", p)
		}
	}
	if f.ReviewCount != nil {
		if p := checkInt(*f.ReviewCount, 0, MaxReviewCount); p != "" {
			return fieldErr(prefix+"review_count", p)
		}
	}
	if f.District != nil {
		if p := checkText(*f.District, 1, MaxDistrictBytes); p != "" {
			return fieldErr(prefix+"district", p)
		}
	}
	if f.Address != nil {
		if p := checkText(*f.Address, 0, MaxAddressBytes); p != "" {
			return fieldErr(prefix+"address", p)
		}
	}
	if f.Phone != nil {
		if p := checkPhone(*f.Phone); p != "" {
			return fieldErr(prefix+"phone", p)
		}
	}
	if f.Tags != nil {
		tags := *f.Tags
		if len(tags) > MaxTags {
			return fieldErrf(prefix+"tags", "got %d tags, want at most %d", len(tags), MaxTags)
		}
		for i, tag := range tags {
			if p := checkText(tag, 1, MaxTagBytes); p != "" {
				return fieldErr(prefix+"tags["+strconv.Itoa(i)+"]", p)
			}
		}
	}
	if f.OpenedOn != nil {
		if _, err := time.Parse(time.DateOnly, *f.OpenedOn); err != nil {
			return fieldErr(prefix+"opened_on", "got "+quoteShort(*f.OpenedOn)+", want a date YYYY-MM-DD")
		}
	}
	return nil
}

func (f *MenuFields) validate(prefix string) error {
	if f.Name != nil {
		if p := checkText(*f.Name, 1, MaxNameBytes); p != "" {
			return fieldErr(prefix+"name", p)
		}
	}
	if f.Description != nil {
		if p := checkText(*f.Description, 0, MaxDescriptionBytes); p != "" {
			return fieldErr(prefix+"description", p)
		}
	}
	if f.Price != nil {
		if p := checkInt(*f.Price, 0, MaxMoney); p != "" {
			return fieldErr(prefix+"price", p)
		}
	}
	if f.ExtraFee != nil {
		if p := checkInt(*f.ExtraFee, 0, MaxFee); p != "" {
			return fieldErr(prefix+"extra_fee", p)
		}
	}
	if f.CookMinutes != nil {
		if p := checkInt(*f.CookMinutes, 0, MaxCookMinutes); p != "" {
			return fieldErr(prefix+"cook_minutes", p)
		}
	}
	return nil
}

// validateMenuValues checks a whole menu without building a MenuFields.
func validateMenuValues(prefix string, m *Menu) error {
	switch {
	case checkText(m.Name, 1, MaxNameBytes) != "":
		return fieldErr(prefix+"name", checkText(m.Name, 1, MaxNameBytes))
	case checkText(m.Description, 0, MaxDescriptionBytes) != "":
		return fieldErr(prefix+"description", checkText(m.Description, 0, MaxDescriptionBytes))
	case checkInt(m.Price, 0, MaxMoney) != "":
		return fieldErr(prefix+"price", checkInt(m.Price, 0, MaxMoney))
	case checkInt(m.ExtraFee, 0, MaxFee) != "":
		return fieldErr(prefix+"extra_fee", checkInt(m.ExtraFee, 0, MaxFee))
	case checkInt(m.CookMinutes, 0, MaxCookMinutes) != "":
		return fieldErr(prefix+"cook_minutes", checkInt(m.CookMinutes, 0, MaxCookMinutes))
	}
	return nil
}

// The check functions return "" when the value is fine, else the problem.

func checkInt(v, lo, hi int) string {
	if v < lo || v > hi {
		return "got " + strconv.Itoa(v) + ", want " + strconv.Itoa(lo) + ".." + strconv.Itoa(hi)
	}
	return ""
}

func checkFloat(v, lo, hi float64) string {
	if math.IsNaN(v) || v < lo || v > hi {
		return "got " + formatFloat(v) + ", want " + formatFloat(lo) + ".." + formatFloat(hi)
	}
	return ""
}

func checkText(s string, minBytes, maxBytes int) string {
	switch {
	case len(s) < minBytes && minBytes == 1:
		return "empty, want a non-empty string"
	case len(s) > maxBytes:
		return "got " + strconv.Itoa(len(s)) + " bytes, want at most " + strconv.Itoa(maxBytes)
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	return ""
}

func checkPhone(s string) string {
	if len(s) > MaxPhoneBytes {
		return "got " + strconv.Itoa(len(s)) + " bytes, want at most " + strconv.Itoa(MaxPhoneBytes)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == ' ' || c == '(' || c == ')') {
			return "got " + quoteShort(s) + ", want digits, spaces and + - ( )"
		}
	}
	return ""
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// quoteShort quotes s, cut to 40 bytes so error messages stay short.
func quoteShort(s string) string {
	const max = 40
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}
