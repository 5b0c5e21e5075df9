package catalog

import (
	"errors"
	"testing"
)

func fullShopFields(name string) *ShopFields {
	return &ShopFields{
		Name: new(name), Category: new("치킨"), Location: &GeoPoint{Lat: 37.5, Lon: 127.0},
		DeliveryRadiusKm: new(3.0), Open: new(true), DeliveryMinutes: new(30), DeliveryFee: new(2000),
		MinOrder: new(15000), Rating: new(4.8), ReviewCount: new(120), District: new("강남구"),
		Address: new("서울특별시 강남구 역삼동 1"), Phone: new("02-123-4567"), Tags: &[]string{"1인분"},
		OpenedOn: new("2020-03-01"),
	}
}

func fullMenuFields(name string, price int) *MenuFields {
	return &MenuFields{
		Name: new(name), Description: new("바삭한 " + name), Price: new(price), ExtraFee: new(0),
		CookMinutes: new(15), Popular: new(false), SoldOut: new(false),
	}
}

func newShopEvent(id, version int64, menus ...Menu) Event {
	ev := ShopUpsertEvent(id, version, fullShopFields("교촌치킨 역삼점"))
	if menus != nil {
		ev.Menus = menus
	}
	return ev
}

func TestApply(t *testing.T) {
	friedChicken := Menu{ID: 7001, ShopID: 7, Name: "후라이드치킨", Description: "d", Price: 18000, CookMinutes: 20}
	spicyChicken := Menu{ID: 7000, ShopID: 7, Name: "양념치킨", Description: "d", Price: 19000, CookMinutes: 20}
	type step struct {
		ev          Event
		wantApplied bool
		wantErr     error
	}
	tests := []struct {
		name  string
		steps []step
		check func(t *testing.T, s *ShopState)
	}{
		{
			name:  "new shop with menus sorts menus by id",
			steps: []step{{newShopEvent(7, 1, friedChicken, spicyChicken), true, nil}},
			check: func(t *testing.T, s *ShopState) {
				if s.Version != 1 || s.Deleted || s.Shop.ID != 7 || s.Shop.Name != "교촌치킨 역삼점" || s.Shop.DeliveryMinutes != 30 {
					t.Errorf("state = %+v", s)
				}
				if len(s.Menus) != 2 || s.Menus[0].ID != 7000 || s.Menus[1].ID != 7001 {
					t.Errorf("menus = %+v, want ids 7000, 7001", s.Menus)
				}
			},
		},
		{
			name: "partial shop upsert sets only its fields",
			steps: []step{
				{newShopEvent(7, 1, friedChicken), true, nil},
				{ShopUpsertEvent(7, 2, &ShopFields{DeliveryMinutes: new(45), Open: new(false)}), true, nil},
			},
			check: func(t *testing.T, s *ShopState) {
				if s.Version != 2 || s.Shop.DeliveryMinutes != 45 || s.Shop.Open || s.Shop.DeliveryFee != 2000 || len(s.Menus) != 1 {
					t.Errorf("state = %+v", s)
				}
			},
		},
		{
			name: "duplicate and stale versions are ignored",
			steps: []step{
				{newShopEvent(7, 1), true, nil},
				{ShopUpsertEvent(7, 3, &ShopFields{DeliveryMinutes: new(40)}), true, nil},
				{ShopUpsertEvent(7, 3, &ShopFields{DeliveryMinutes: new(99)}), false, nil},
				{ShopUpsertEvent(7, 2, &ShopFields{DeliveryMinutes: new(20)}), false, nil},
				{ShopDeleteEvent(7, 2), false, nil},
			},
			check: func(t *testing.T, s *ShopState) {
				if s.Version != 3 || s.Shop.DeliveryMinutes != 40 || s.Deleted {
					t.Errorf("state = %+v, want version 3, 40 minutes, live", s)
				}
			},
		},
		{
			name: "out of order: the newer event wins, the older is dropped",
			steps: []step{
				{newShopEvent(7, 1), true, nil},
				{ShopUpsertEvent(7, 5, &ShopFields{DeliveryFee: new(0)}), true, nil},
				{ShopUpsertEvent(7, 4, &ShopFields{DeliveryFee: new(3000)}), false, nil},
			},
			check: func(t *testing.T, s *ShopState) {
				if s.Version != 5 || s.Shop.DeliveryFee != 0 {
					t.Errorf("state = %+v, want version 5, fee 0", s)
				}
			},
		},
		{
			name: "new shop needs every field",
			steps: []step{
				{ShopUpsertEvent(7, 1, &ShopFields{DeliveryMinutes: new(30)}), false, ErrIncompleteShop},
			},
			check: func(t *testing.T, s *ShopState) {
				if s.Version != 0 || s.Shop.ID != 0 {
					t.Errorf("failed event changed the state: %+v", s)
				}
			},
		},
		{
			name: "menu upsert adds a full menu and updates an existing one",
			steps: []step{
				{newShopEvent(7, 1, friedChicken), true, nil},
				{MenuUpsertEvent(7, 7000, 2, fullMenuFields("양념치킨", 19000)), true, nil},
				{MenuUpsertEvent(7, 7001, 3, &MenuFields{Price: new(17000), SoldOut: new(true)}), true, nil},
			},
			check: func(t *testing.T, s *ShopState) {
				if len(s.Menus) != 2 || s.Menus[0].ID != 7000 || s.Menus[0].Name != "양념치킨" || s.Menus[0].ShopID != 7 {
					t.Fatalf("menus = %+v", s.Menus)
				}
				if m := s.Menus[1]; m.Price != 17000 || !m.SoldOut || m.Name != "후라이드치킨" {
					t.Errorf("updated menu = %+v", m)
				}
			},
		},
		{
			name: "new menu needs every field",
			steps: []step{
				{newShopEvent(7, 1), true, nil},
				{MenuUpsertEvent(7, 7005, 2, &MenuFields{Price: new(1000)}), false, ErrIncompleteMenu},
			},
			check: func(t *testing.T, s *ShopState) {
				if s.Version != 1 || len(s.Menus) != 0 {
					t.Errorf("state = %+v", s)
				}
			},
		},
		{
			name: "menu delete removes the menu; deleting a missing one only advances the version",
			steps: []step{
				{newShopEvent(7, 1, friedChicken, spicyChicken), true, nil},
				{MenuDeleteEvent(7, 7000, 2), true, nil},
				{MenuDeleteEvent(7, 7000, 3), true, nil},
			},
			check: func(t *testing.T, s *ShopState) {
				if s.Version != 3 || len(s.Menus) != 1 || s.Menus[0].ID != 7001 {
					t.Errorf("state = %+v", s)
				}
			},
		},
		{
			name: "shop delete leaves a tombstone; menu events then fail; a full upsert re-creates",
			steps: []step{
				{newShopEvent(7, 1, friedChicken), true, nil},
				{ShopDeleteEvent(7, 2), true, nil},
				{MenuUpsertEvent(7, 7001, 3, &MenuFields{Price: new(1)}), false, ErrShopNotFound},
				{ShopUpsertEvent(7, 3, &ShopFields{Open: new(true)}), false, ErrIncompleteShop},
				{newShopEvent(7, 1), false, nil}, // stale: must not resurrect
				{newShopEvent(7, 4), true, nil},
			},
			check: func(t *testing.T, s *ShopState) {
				if s.Version != 4 || s.Deleted || s.Shop.Name != "교촌치킨 역삼점" || len(s.Menus) != 0 {
					t.Errorf("state = %+v, want live shop at version 4 without menus", s)
				}
			},
		},
		{
			name: "delete on an empty state is a tombstone",
			steps: []step{
				{ShopDeleteEvent(7, 3), true, nil},
				{newShopEvent(7, 2), false, nil},
			},
			check: func(t *testing.T, s *ShopState) {
				if !s.Deleted || s.Version != 3 || s.Shop.ID != 7 {
					t.Errorf("state = %+v", s)
				}
			},
		},
		{
			name: "menu event before the shop exists fails",
			steps: []step{
				{MenuUpsertEvent(7, 7000, 1, fullMenuFields("양념치킨", 19000)), false, ErrShopNotFound},
			},
		},
		{
			name: "event of another shop fails",
			steps: []step{
				{newShopEvent(7, 1), true, nil},
				{ShopUpsertEvent(8, 2, &ShopFields{Open: new(true)}), false, ErrWrongShop},
				{MenuUpsertEvent(8, 8000, 2, &MenuFields{Price: new(1000)}), false, ErrWrongShop},
			},
		},
		{
			name: "invalid event fails validation",
			steps: []step{
				{ShopUpsertEvent(7, 1, &ShopFields{Rating: new(9.0)}), false, ErrInvalidEvent},
			},
		},
		{
			name: "full upsert on a live shop replaces menus only when given",
			steps: []step{
				{newShopEvent(7, 1, friedChicken, spicyChicken), true, nil},
				{newShopEvent(7, 2), true, nil},
				{newShopEvent(7, 3, friedChicken), true, nil},
			},
			check: func(t *testing.T, s *ShopState) {
				if len(s.Menus) != 1 || s.Menus[0].ID != 7001 {
					t.Errorf("menus = %+v, want only 7001", s.Menus)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s ShopState
			for i, st := range tc.steps {
				applied, err := s.Apply(st.ev)
				if applied != st.wantApplied || !errors.Is(err, st.wantErr) || (err != nil) != (st.wantErr != nil) {
					t.Fatalf("step %d: Apply = %v, %v; want %v, %v", i, applied, err, st.wantApplied, st.wantErr)
				}
			}
			if tc.check != nil {
				tc.check(t, &s)
			}
		})
	}
}

func TestApplyDoesNotAliasEventMemory(t *testing.T) {
	tags := []string{"1인분"}
	f := fullShopFields("a")
	f.Tags = &tags
	menus := []Menu{{ID: 7000, ShopID: 7, Name: "n", Price: 1000}}
	ev := ShopUpsertEvent(7, 1, f)
	ev.Menus = menus
	var s ShopState
	if _, err := s.Apply(ev); err != nil {
		t.Fatal(err)
	}
	tags[0] = "changed"
	menus[0].Name = "changed"
	if s.Shop.Tags[0] != "1인분" || s.Menus[0].Name != "n" {
		t.Errorf("state aliases the event: tags %v, menu %q", s.Shop.Tags, s.Menus[0].Name)
	}
}
