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
	for _, role := range []string{RoleNested, RoleShops, RoleMenus} {
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
		if hasMenus == (role == RoleShops) {
			t.Errorf("%s: menus mapped = %v", role, hasMenus)
		}
		if role == RoleMenus {
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
