package catalog

// Volatility says how often a field changes. The zero value is invalid.
type Volatility uint8

const (
	// Cold fields change rarely (days or months). Cold shop fields may be
	// copied into the menu index; a change to one must update the copies.
	Cold Volatility = iota + 1
	// Hot fields change all the time (seconds or minutes).
	Hot
)

func (v Volatility) String() string {
	switch v {
	case Cold:
		return "cold"
	case Hot:
		return "hot"
	}
	return "invalid"
}

type fieldVolatility struct {
	name       string // JSON name
	volatility Volatility
}

// shopFieldTable is THE place that says which shop field is hot. Order is the
// canonical field order used in messages. The identity "id" is not a field.
// min_order is cold: shops change it a few times a year, for promotions.
var shopFieldTable = [...]fieldVolatility{
	{"name", Cold},
	{"category", Cold},
	{"location", Cold},
	{"delivery_radius_km", Cold},
	{"open", Hot},
	{"delivery_minutes", Hot},
	{"delivery_fee", Hot},
	{"min_order", Cold},
	{"rating", Hot},
	{"review_count", Hot},
	{"district", Cold},
	{"address", Cold},
	{"phone", Cold},
	{"tags", Cold},
	{"opened_on", Cold},
}

// menuFieldTable is THE place that says which menu field is hot. The
// identities "id" and "shop_id" are not fields.
var menuFieldTable = [...]fieldVolatility{
	{"name", Cold},
	{"description", Cold},
	{"price", Hot},
	{"extra_fee", Cold},
	{"cook_minutes", Cold},
	{"popular", Hot},
	{"sold_out", Hot},
}

func lookupVolatility(table []fieldVolatility, name string) (Volatility, bool) {
	for _, f := range table {
		if f.name == name {
			return f.volatility, true
		}
	}
	return 0, false
}

func fieldNames(table []fieldVolatility, want Volatility) []string {
	var out []string
	for _, f := range table {
		if want == 0 || f.volatility == want {
			out = append(out, f.name)
		}
	}
	return out
}

// ShopFieldVolatility reports whether a shop field (JSON name) is hot or cold;
// ok is false for an unknown name.
func ShopFieldVolatility(name string) (v Volatility, ok bool) {
	return lookupVolatility(shopFieldTable[:], name)
}

// MenuFieldVolatility reports whether a menu field (JSON name) is hot or cold;
// ok is false for an unknown name.
func MenuFieldVolatility(name string) (v Volatility, ok bool) {
	return lookupVolatility(menuFieldTable[:], name)
}

// ShopFieldNames returns every shop field name in canonical order (a new slice).
func ShopFieldNames() []string { return fieldNames(shopFieldTable[:], 0) }

// MenuFieldNames returns every menu field name in canonical order (a new slice).
func MenuFieldNames() []string { return fieldNames(menuFieldTable[:], 0) }

// HotShopFields returns the hot shop field names (a new slice).
func HotShopFields() []string { return fieldNames(shopFieldTable[:], Hot) }

// ColdShopFields returns the cold shop field names (a new slice).
func ColdShopFields() []string { return fieldNames(shopFieldTable[:], Cold) }

// HotMenuFields returns the hot menu field names (a new slice).
func HotMenuFields() []string { return fieldNames(menuFieldTable[:], Hot) }

// ColdMenuFields returns the cold menu field names (a new slice).
func ColdMenuFields() []string { return fieldNames(menuFieldTable[:], Cold) }
