package layout

import (
	"encoding/json"
	"testing"

	"github.com/baedal/baedal/catalog"
)

func TestCopiedFieldsAreCold(t *testing.T) {
	for _, f := range CopiedShopFields() {
		v, ok := catalog.ShopFieldVolatility(f)
		if !ok {
			t.Errorf("copied field %q is not a shop field", f)
		}
		if v != catalog.Cold {
			t.Errorf("copied field %q is %s: copying a hot field into the menu index brings write amplification back", f, v)
		}
	}
}

func TestSplitTouches(t *testing.T) {
	minutes, name := 30, "새이름"
	hot := catalog.ShopUpsertEvent(1, 2, &catalog.ShopFields{DeliveryMinutes: &minutes})
	cold := catalog.ShopUpsertEvent(1, 3, &catalog.ShopFields{Name: &name})
	menu := catalog.MenuDeleteEvent(1, 1001, 4)
	del := catalog.ShopDeleteEvent(1, 5)
	cases := []struct {
		name            string
		ev              catalog.Event
		shop, menusDocs bool
	}{
		{"hot shop field", hot, true, false},
		{"copied cold shop field", cold, true, true},
		{"menu change (the shop document carries the aggregate version)", menu, true, true},
		{"shop delete", del, true, true},
	}
	for _, tc := range cases {
		s, m := SplitTouches(tc.ev)
		if s != tc.shop || m != tc.menusDocs {
			t.Errorf("%s: touches shop=%v menus=%v, want %v %v", tc.name, s, m, tc.shop, tc.menusDocs)
		}
	}
}

func TestIndexBodiesAreStrictAndShareAnalysis(t *testing.T) {
	cfg := Defaults()
	for _, role := range []string{RoleNested, RoleShops, RoleMenus, RoleHotShops, RoleHotMenus} {
		raw, err := cfg.IndexBody(role)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Settings struct {
				Analysis map[string]any `json:"analysis"`
			} `json:"settings"`
			Mappings struct {
				Dynamic    string                    `json:"dynamic"`
				Properties map[string]map[string]any `json:"properties"`
			} `json:"mappings"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		if body.Mappings.Dynamic != "strict" {
			t.Errorf("%s: dynamic = %q, want strict", role, body.Mappings.Dynamic)
		}
		if body.Settings.Analysis["analyzer"] == nil {
			t.Errorf("%s: no analyzers", role)
		}
		_, hasMenus := body.Mappings.Properties["menus"]
		if hasMenus == (role == RoleShops || role == RoleHotShops) {
			t.Errorf("%s: menus mapped = %v", role, hasMenus)
		}
		if role == RoleMenus || role == RoleHotMenus {
			for _, hot := range catalog.HotShopFields() {
				if _, ok := body.Mappings.Properties[hot]; ok {
					t.Errorf("menu index maps hot shop field %q", hot)
				}
			}
		}
	}
	if _, err := cfg.IndexBody("nope"); err == nil {
		t.Error("unknown role accepted")
	}
}

func TestDocsRoundTripToState(t *testing.T) {
	st := catalog.NewGenerator(7).Shop(3)
	back := StateFromNested(BuildNested(&st, st.Version))
	if back.Shop.Name != st.Shop.Name || len(back.Menus) != len(st.Menus) || back.Menus[0] != st.Menus[0] {
		t.Errorf("nested round trip lost data")
	}
	m := StateFromMenus(BuildMenus(&st, st.Version))
	if m.Shop.Location != st.Shop.Location || len(m.Menus) != len(st.Menus) {
		t.Errorf("menus round trip lost data")
	}
	n := BuildNested(&st, 1)
	if *n.Menus[0].TotalFee != st.Shop.DeliveryFee+st.Menus[0].ExtraFee || *n.Menus[0].ETA != st.Shop.DeliveryMinutes+st.Menus[0].CookMinutes {
		t.Errorf("nested per-menu copies are wrong")
	}
	if BuildMenus(&st, 1).Menus[0].TotalFee != nil {
		t.Errorf("split menu docs must not carry hot shop values")
	}
}

// TestHotMenusHoldEveryColdField checks the hot layout's menu document: a hit
// needs every cold shop field (no second request), and no hot one (a hot
// update must not rewrite the menus).
func TestHotMenusHoldEveryColdField(t *testing.T) {
	st := catalog.NewGenerator(7).Shop(3)
	back := StateFromHotMenus(BuildHotMenus(&st, st.Version))
	want := st.Shop
	for _, f := range catalog.HotShopFields() {
		switch f {
		case "open":
			want.Open = false
		case "delivery_minutes":
			want.DeliveryMinutes = 0
		case "delivery_fee":
			want.DeliveryFee = 0
		case "rating":
			want.Rating = 0
		case "review_count":
			want.ReviewCount = 0
		default:
			t.Fatalf("hot field %q is not handled by this test", f)
		}
	}
	raw, _ := json.Marshal(back.Shop)
	wantRaw, _ := json.Marshal(want)
	if string(raw) != string(wantRaw) {
		t.Errorf("cold fields lost:\n got %s\nwant %s", raw, wantRaw)
	}
	if len(back.Menus) != len(st.Menus) || back.Menus[0] != st.Menus[0] {
		t.Errorf("menus lost")
	}
	minutes := 30
	if s, m := HotTouches(catalog.ShopUpsertEvent(1, 2, &catalog.ShopFields{DeliveryMinutes: &minutes})); !s || m {
		t.Errorf("a hot update touches shop=%v menus=%v, want only the shop document", s, m)
	}
	phone := "02-000-0000"
	if s, m := HotTouches(catalog.ShopUpsertEvent(1, 2, &catalog.ShopFields{Phone: &phone})); !s || !m {
		t.Errorf("a cold update touches shop=%v menus=%v, want both", s, m)
	}
}

// TestHotHeadAndMenusMakeTheShop checks the hot layout's two documents
// between them: the head holds the id, the version and exactly the hot
// fields (what its mapping declares), and the head and the menu document
// read back give the whole shop.
func TestHotHeadAndMenusMakeTheShop(t *testing.T) {
	st := catalog.NewGenerator(7).Shop(3)
	raw, _ := json.Marshal(BuildHotHead(&st, st.Version))
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	want := append([]string{"id", "version"}, catalog.HotShopFields()...)
	if len(fields) != len(want) {
		t.Errorf("head fields %v, want %v", fields, want)
	}
	for _, f := range want {
		if _, ok := fields[f]; !ok {
			t.Errorf("head lacks %q: %s", f, raw)
		}
	}
	cfg := Defaults()
	body, err := cfg.IndexBody(RoleHotShops)
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Mappings struct {
			Properties map[string]any `json:"properties"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(body, &idx); err != nil {
		t.Fatal(err)
	}
	for f := range fields {
		if _, ok := idx.Mappings.Properties[f]; !ok {
			t.Errorf("head field %q is not in the shop-head mapping", f)
		}
	}
	if len(idx.Mappings.Properties) != len(want)+2 { // + deleted, deleted_at
		t.Errorf("shop-head mapping %v, want %v, deleted and deleted_at", idx.Mappings.Properties, want)
	}

	head, err := StateFromHotHead(raw)
	if err != nil {
		t.Fatal(err)
	}
	if head.Version != st.Version {
		t.Errorf("head version %d, want %d", head.Version, st.Version)
	}
	menus := StateFromHotMenus(BuildHotMenus(&st, st.Version))
	got, _ := json.Marshal(WithHotFields(menus.Shop, head.Shop))
	wantShop, _ := json.Marshal(st.Shop)
	if string(got) != string(wantShop) {
		t.Errorf("head and menus give\n %s\nwant\n %s", got, wantShop)
	}
}

// A node must hold the baedal-hot plugin at the version baedal speaks: an
// absent plugin, another version (a rolling upgrade under way) and two
// versions at once are all named.
func TestHotPluginHeldNamesWhatANodeHasInstead(t *testing.T) {
	for _, c := range []struct {
		versions []string
		want     string
	}{
		{[]string{HotPluginVersion}, ""},
		{nil, "no " + HotPlugin},
		{[]string{"0.1.0"}, HotPlugin + " 0.1.0"},
		{[]string{HotPluginVersion, "0.1.0"}, HotPlugin + " " + HotPluginVersion + ", 0.1.0"},
	} {
		if got := hotPluginHeld(c.versions); got != c.want {
			t.Errorf("hotPluginHeld(%v) = %q, want %q", c.versions, got, c.want)
		}
	}
}
