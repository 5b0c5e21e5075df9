package catalog

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

func TestVolatilityTableCoversEveryField(t *testing.T) {
	shopNames := slices.DeleteFunc(jsonNames(reflect.TypeFor[Shop]()), func(n string) bool { return n == "id" })
	if got := ShopFieldNames(); !slices.Equal(got, shopNames) {
		t.Errorf("ShopFieldNames() = %v, Shop JSON fields = %v", got, shopNames)
	}
	if got := jsonNames(reflect.TypeFor[ShopFields]()); !slices.Equal(got, shopNames) {
		t.Errorf("ShopFields JSON fields = %v, want %v", got, shopNames)
	}
	menuNames := slices.DeleteFunc(jsonNames(reflect.TypeFor[Menu]()), func(n string) bool { return n == "id" || n == "shop_id" })
	if got := MenuFieldNames(); !slices.Equal(got, menuNames) {
		t.Errorf("MenuFieldNames() = %v, Menu JSON fields = %v", got, menuNames)
	}
	if got := jsonNames(reflect.TypeFor[MenuFields]()); !slices.Equal(got, menuNames) {
		t.Errorf("MenuFields JSON fields = %v, want %v", got, menuNames)
	}
}

func TestHotAndColdFields(t *testing.T) {
	wantHotShop := []string{"open", "delivery_minutes", "delivery_fee", "rating", "review_count"}
	if got := HotShopFields(); !slices.Equal(got, wantHotShop) {
		t.Errorf("HotShopFields() = %v, want %v", got, wantHotShop)
	}
	wantColdShop := []string{"name", "category", "location", "delivery_radius_km", "min_order", "district", "address", "phone", "tags", "opened_on"}
	if got := ColdShopFields(); !slices.Equal(got, wantColdShop) {
		t.Errorf("ColdShopFields() = %v, want %v", got, wantColdShop)
	}
	if got, want := HotMenuFields(), []string{"price", "popular", "sold_out"}; !slices.Equal(got, want) {
		t.Errorf("HotMenuFields() = %v, want %v", got, want)
	}
	if got, want := ColdMenuFields(), []string{"name", "description", "extra_fee", "cook_minutes"}; !slices.Equal(got, want) {
		t.Errorf("ColdMenuFields() = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name   string
		want   Volatility
		wantOK bool
	}{{"delivery_minutes", Hot, true}, {"location", Cold, true}, {"id", 0, false}, {"price", 0, false}} {
		if got, ok := ShopFieldVolatility(tc.name); got != tc.want || ok != tc.wantOK {
			t.Errorf("ShopFieldVolatility(%q) = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
	if v, ok := MenuFieldVolatility("sold_out"); v != Hot || !ok {
		t.Errorf("MenuFieldVolatility(sold_out) = %v, %v", v, ok)
	}
	// The accessors return copies.
	HotShopFields()[0] = "mutated"
	if HotShopFields()[0] != "open" {
		t.Error("HotShopFields shares its slice")
	}
}
