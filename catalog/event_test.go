package catalog

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestEventJSONWireForm(t *testing.T) {
	tests := []struct {
		ev   Event
		want string
	}{
		{
			ShopUpsertEvent(123, 17, &ShopFields{DeliveryMinutes: new(35), Open: new(true)}),
			`{"type":"shop","id":123,"version":17,"op":"upsert","fields":{"open":true,"delivery_minutes":35}}`,
		},
		{
			MenuUpsertEvent(123, 1230045, 18, &MenuFields{Price: new(15000)}),
			`{"type":"menu","id":1230045,"shop_id":123,"version":18,"op":"upsert","fields":{"price":15000}}`,
		},
		{ShopDeleteEvent(125, 9), `{"type":"shop","id":125,"version":9,"op":"delete"}`},
		{MenuDeleteEvent(125, 125001, 10), `{"type":"menu","id":125001,"shop_id":125,"version":10,"op":"delete"}`},
		{
			Event{Type: EntityShop, ID: 5, Version: 1, Op: OpUpsert, Shop: &ShopFields{Open: new(false)}, Menus: []Menu{}},
			`{"type":"shop","id":5,"version":1,"op":"upsert","fields":{"open":false},"menus":[]}`,
		},
	}
	for _, tc := range tests {
		got, err := json.Marshal(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("Marshal = %s\nwant      %s", got, tc.want)
		}
		var back Event
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", got, err)
		}
		if !reflect.DeepEqual(back, tc.ev) {
			t.Errorf("round trip of %s = %+v, want %+v", got, back, tc.ev)
		}
	}
}

func TestParseEventsArrayAndNDJSON(t *testing.T) {
	array := `[
	  {"type":"shop","id":123,"version":17,"op":"upsert","fields":{"delivery_minutes":35,"open":true}},
	  {"type":"menu","id":1230045,"shop_id":123,"version":18,"op":"upsert","fields":{"price":15000}},
	  {"type":"shop","id":125,"version":9,"op":"delete"}
	]`
	ndjson := "{\"type\":\"shop\",\"id\":123,\"version\":17,\"op\":\"upsert\",\"fields\":{\"delivery_minutes\":35,\"open\":true}}\n" +
		"\n   \n" +
		"{\"type\":\"menu\",\"id\":1230045,\"shop_id\":123,\"version\":18,\"op\":\"upsert\",\"fields\":{\"price\":15000}}\r\n" +
		"{\"type\":\"shop\",\"id\":125,\"version\":9,\"op\":\"delete\"}"
	for name, body := range map[string]string{"array": array, "ndjson": ndjson} {
		t.Run(name, func(t *testing.T) {
			events, err := ParseEvents([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 3 {
				t.Fatalf("got %d events, want 3", len(events))
			}
			if e := events[0]; e.Type != EntityShop || e.ID != 123 || e.Version != 17 || *e.Shop.DeliveryMinutes != 35 || !*e.Shop.Open {
				t.Errorf("event 0 = %+v", e)
			}
			if e := events[1]; e.Type != EntityMenu || e.ShopID != 123 || e.AggregateID() != 123 || *e.Menu.Price != 15000 {
				t.Errorf("event 1 = %+v", e)
			}
			if e := events[2]; e.Op != OpDelete || e.ID != 125 || e.Shop != nil {
				t.Errorf("event 2 = %+v", e)
			}
		})
	}
}

func TestParseEventsIntegersAreExact(t *testing.T) {
	events, err := ParseEvents([]byte(`[{"type":"menu","id":9007199254740993,"shop_id":9007199254740,"version":9007199254740995,"op":"delete"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if events[0].ID != 9007199254740993 || events[0].Version != 9007199254740995 {
		t.Errorf("got id %d version %d", events[0].ID, events[0].Version)
	}
}

func TestParseEventsRejects(t *testing.T) {
	good := `{"type":"shop","id":1,"version":1,"op":"delete"}`
	tests := []struct {
		name      string
		body      string
		wantIs    error
		wantParts []string
	}{
		{"empty body", "  \n ", ErrEmptyBatch, nil},
		{"empty array", "[]", ErrEmptyBatch, nil},
		{"garbage", "hello", ErrMalformedJSON, []string{"event 0 (line 1)"}},
		{"truncated array", `[` + good + `,{"type":`, ErrMalformedJSON, []string{"event 1"}},
		{"garbage second line", good + "\n{nope}\n" + good, ErrMalformedJSON, []string{"event 1 (line 2)"}},
		{"bad type at position 3", "[" + strings.Repeat(good+",", 3) + `{"type":"shoop","id":1,"version":1,"op":"delete"}]`,
			ErrInvalidEvent, []string{`event 3: field "type": got "shoop", allowed: shop, menu`}},
		{"data after array", "[" + good + "] x", ErrMalformedJSON, []string{"after the closing ]"}},
		{"array of non-objects", "[1]", ErrInvalidEvent, []string{"event 0", "must be a JSON object"}},
		{"nested array in ndjson", "[[" + good + "]]", ErrInvalidEvent, []string{"event 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			events, err := ParseEvents([]byte(tc.body))
			if err == nil {
				t.Fatalf("ParseEvents accepted %q: %+v", tc.body, events)
			}
			if !errors.Is(err, tc.wantIs) {
				t.Errorf("error %q is not %v", err, tc.wantIs)
			}
			for _, part := range tc.wantParts {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
		})
	}
}

// TestParseEventsRejectsBadFields covers the strict decoding: unknown keys and
// wrong value types, each message naming the field.
func TestParseEventsRejectsBadFields(t *testing.T) {
	tests := []struct {
		name      string
		event     string
		wantParts []string
	}{
		{"unknown top-level key", `{"type":"shop","id":1,"verison":2,"op":"delete"}`, []string{`field "verison"`, "unknown field", "allowed: type, id"}},
		{"unknown shop field", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"delivery_minute":3}}`,
			[]string{`field "fields.delivery_minute"`, "allowed: name, category", "delivery_minutes"}},
		{"menu field on shop event", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"price":3}}`, []string{`"fields.price"`, "unknown"}},
		{"open as string", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"open":"yes"}}`, []string{`field "fields.open"`, `got "yes" (string), want a boolean`}},
		{"open as null", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"open":null}}`, []string{`"fields.open"`, "got null, want a boolean"}},
		{"fractional minutes", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"delivery_minutes":30.5}}`, []string{`"fields.delivery_minutes"`, "got 30.5, want an integer"}},
		{"id as string", `{"type":"shop","id":"1","version":2,"op":"delete"}`, []string{`field "id"`, "want an integer"}},
		{"huge version", `{"type":"shop","id":1,"version":99999999999999999999,"op":"delete"}`, []string{`field "version"`, "64-bit"}},
		{"missing type", `{"id":1,"version":2,"op":"delete"}`, []string{`field "type"`, "required"}},
		{"type as number", `{"type":1,"id":1,"version":2,"op":"delete"}`, []string{`field "type"`, "want a string"}},
		{"missing op", `{"type":"shop","id":1,"version":2}`, []string{`field "op"`, "required"}},
		{"location lat as string", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"location":{"lat":"37","lon":127}}}`, []string{`"fields.location.lat"`, "want a number"}},
		{"location without lon", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"location":{"lat":37}}}`, []string{`"fields.location.lon"`, "required"}},
		{"tags not strings", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"tags":["a",2]}}`, []string{`"fields.tags[1]"`, "want a string"}},
		{"fields not an object", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":[1]}`, []string{`field "fields"`, "want an object"}},
		{"menus entry lacks fields", `{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"open":true},"menus":[{"id":5,"name":"x"}]}`, []string{`"menus[0]"`, "missing: description"}},
		{"menus entry bad price", `{"type":"shop","id":1,"version":2,"op":"upsert","menus":[{"id":5,"name":"x","description":"","price":"1","extra_fee":0,"cook_minutes":1,"popular":false,"sold_out":false}]}`, []string{`"menus[0].price"`, "want an integer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEvents([]byte(tc.event))
			if err == nil {
				t.Fatalf("accepted %s", tc.event)
			}
			if !errors.Is(err, ErrInvalidEvent) {
				t.Errorf("error %q is not ErrInvalidEvent", err)
			}
			for _, part := range tc.wantParts {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	shop := func(f *ShopFields) Event { return ShopUpsertEvent(1, 2, f) }
	menu := func(f *MenuFields) Event { return MenuUpsertEvent(1, 1000, 2, f) }
	full := fullShopFields("교촌치킨")
	tests := []struct {
		name      string
		ev        Event
		wantParts []string
	}{
		{"bad type", Event{Type: "shoop", ID: 1, Version: 1, Op: OpDelete}, []string{`field "type": got "shoop", allowed: shop, menu`}},
		{"bad op", Event{Type: EntityShop, ID: 1, Version: 1, Op: "remove"}, []string{`field "op": got "remove", allowed: upsert, delete`}},
		{"id 0", ShopDeleteEvent(0, 1), []string{`field "id"`, "got 0", ">= 1"}},
		{"negative id", ShopDeleteEvent(-4, 1), []string{`field "id"`, "got -4"}},
		{"version 0", ShopDeleteEvent(1, 0), []string{`field "version"`, "got 0"}},
		{"shop id 2^63-1", ShopDeleteEvent(math.MaxInt64, 1), []string{`field "id"`, "got 9223372036854775807", "1..9223372036854774"}},
		{"shop id above MaxShopID", ShopUpsertEvent(MaxShopID+1, 1, &ShopFields{Open: new(true)}), []string{`field "id"`}},
		{"menu of shop 2^63-1", MenuDeleteEvent(math.MaxInt64, 5, 1), []string{`field "shop_id"`, "1..9223372036854774"}},
		{"menu without shop_id", MenuDeleteEvent(0, 1000, 1), []string{`field "shop_id"`, "required on a menu event"}},
		{"shop event with other shop_id", Event{Type: EntityShop, ID: 1, ShopID: 2, Version: 1, Op: OpDelete}, []string{`field "shop_id"`}},
		{"delete with fields", Event{Type: EntityShop, ID: 1, Version: 1, Op: OpDelete, Shop: &ShopFields{Open: new(true)}}, []string{`field "fields"`, "not allowed on a delete"}},
		{"upsert without fields", shop(nil), []string{`field "fields"`, "at least one field"}},
		{"upsert with empty fields", shop(&ShopFields{}), []string{`field "fields"`}},
		{"menu upsert without fields", menu(nil), []string{`field "fields"`}},
		{"menus on a menu event", Event{Type: EntityMenu, ID: 1000, ShopID: 1, Version: 1, Op: OpUpsert, Menu: &MenuFields{Price: new(1)}, Menus: []Menu{}}, []string{`field "menus"`}},
		{"menus on a partial shop upsert", Event{Type: EntityShop, ID: 1, Version: 1, Op: OpUpsert, Shop: &ShopFields{Open: new(true)}, Menus: []Menu{}}, []string{`field "menus"`, "full shop upsert", "name"}},
		{"latitude out of range", shop(&ShopFields{Location: &GeoPoint{Lat: 91, Lon: 127}}), []string{`"fields.location.lat"`, "got 91", "-90..90"}},
		{"longitude out of range", shop(&ShopFields{Location: &GeoPoint{Lat: 37, Lon: -181}}), []string{`"fields.location.lon"`, "-181"}},
		{"negative delivery minutes", shop(&ShopFields{DeliveryMinutes: new(-1)}), []string{`"fields.delivery_minutes"`, "got -1"}},
		{"negative fee", shop(&ShopFields{DeliveryFee: new(-500)}), []string{`"fields.delivery_fee"`, "got -500"}},
		{"negative min order", shop(&ShopFields{MinOrder: new(-1)}), []string{`"fields.min_order"`}},
		{"rating above 5", shop(&ShopFields{Rating: new(5.5)}), []string{`"fields.rating"`, "got 5.5", "0..5"}},
		{"rating below 0", shop(&ShopFields{Rating: new(-0.1)}), []string{`"fields.rating"`}},
		{"negative review count", shop(&ShopFields{ReviewCount: new(-3)}), []string{`"fields.review_count"`}},
		{"zero radius", shop(&ShopFields{DeliveryRadiusKm: new(0.0)}), []string{`"fields.delivery_radius_km"`, "more than 0"}},
		{"unknown category", shop(&ShopFields{Category: new("버블티")}), []string{`"fields.category"`, `got "버블티"`, "allowed: 치킨, 피자"}},
		{"empty name", shop(&ShopFields{Name: new("")}), []string{`"fields.name"`, "empty"}},
		{"name too long", shop(&ShopFields{Name: new(strings.Repeat("가", 101))}), []string{`"fields.name"`, "303 bytes", "at most 300"}},
		{"too many tags", shop(&ShopFields{Tags: new(make([]string, 33))}), []string{`"fields.tags"`, "33 tags"}},
		{"empty tag", shop(&ShopFields{Tags: &[]string{"1인분", ""}}), []string{`"fields.tags[1]"`, "empty"}},
		{"bad date", shop(&ShopFields{OpenedOn: new("2020-13-01")}), []string{`"fields.opened_on"`, "YYYY-MM-DD"}},
		{"bad phone", shop(&ShopFields{Phone: new("call me")}), []string{`"fields.phone"`}},
		{"invalid utf-8", shop(&ShopFields{Address: new("\xff")}), []string{`"fields.address"`, "UTF-8"}},
		{"negative price", menu(&MenuFields{Price: new(-1)}), []string{`"fields.price"`, "got -1"}},
		{"negative extra fee", menu(&MenuFields{ExtraFee: new(-500)}), []string{`"fields.extra_fee"`}},
		{"negative cook minutes", menu(&MenuFields{CookMinutes: new(-1)}), []string{`"fields.cook_minutes"`}},
		{"description too long", menu(&MenuFields{Description: new(strings.Repeat("x", 2001))}), []string{`"fields.description"`}},
		{"menu of another shop in menus", Event{Type: EntityShop, ID: 1, Version: 1, Op: OpUpsert, Shop: full,
			Menus: []Menu{{ID: 5, ShopID: 2, Name: "x", Price: 1}}}, []string{`"menus[0].shop_id"`, "got 2"}},
		{"duplicate menu ids", Event{Type: EntityShop, ID: 1, Version: 1, Op: OpUpsert, Shop: full,
			Menus: []Menu{{ID: 5, ShopID: 1, Name: "x"}, {ID: 5, ShopID: 1, Name: "y"}}}, []string{`field "menus"`, "menu id 5 appears twice"}},
		{"menu in menus with bad price", Event{Type: EntityShop, ID: 1, Version: 1, Op: OpUpsert, Shop: full,
			Menus: []Menu{{ID: 5, ShopID: 1, Name: "x"}, {ID: 6, ShopID: 1, Name: "y", Price: -5}}}, []string{`"menus[1].price"`, "got -5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.ev.Validate()
			if err == nil {
				t.Fatalf("Validate accepted %+v", tc.ev)
			}
			if !errors.Is(err, ErrInvalidEvent) {
				t.Errorf("error %q is not ErrInvalidEvent", err)
			}
			for _, part := range tc.wantParts {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
		})
	}
}

func TestAtIndex(t *testing.T) {
	err := AtIndex(3, ShopDeleteEvent(1, 0).Validate())
	if got, want := err.Error(), `event 3: field "version": got 0, want an integer >= 1`; got != want {
		t.Errorf("AtIndex = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrInvalidEvent) {
		t.Error("AtIndex lost the sentinel")
	}
	if AtIndex(1, nil) != nil {
		t.Error("AtIndex(nil) != nil")
	}
}

func TestParseEventsEachKeepsGoodEventsOfNDJSON(t *testing.T) {
	body := `{"type":"shop","id":1,"version":2,"op":"delete"}
{"type":"shop","id":1,"version":2,"op":"upsert","fields":{"rating":8}}
not json
{"type":"shop","id":2,"version":2,"op":"delete"}`
	var good []int64
	var badLines []int
	err := ParseEventsEach([]byte(body), func(index int, raw []byte, ev Event, evErr error) bool {
		if evErr != nil {
			var be *BatchError
			if !errors.As(evErr, &be) || be.Index != index {
				t.Errorf("event %d: error %v is not a BatchError for its index", index, evErr)
			}
			badLines = append(badLines, be.Line)
			return true
		}
		good = append(good, ev.ID)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(good) != 2 || good[0] != 1 || good[1] != 2 || len(badLines) != 2 || badLines[0] != 2 || badLines[1] != 3 {
		t.Errorf("good ids %v, bad lines %v; want [1 2], [2 3]", good, badLines)
	}
}

func FuzzParseEvents(f *testing.F) {
	seeds := []string{
		`[{"type":"shop","id":123,"version":17,"op":"upsert","fields":{"delivery_minutes":35,"open":true}}]`,
		`{"type":"menu","id":1230045,"shop_id":123,"version":18,"op":"upsert","fields":{"price":15000}}`,
		"{\"type\":\"shop\",\"id\":125,\"version\":9,\"op\":\"delete\"}\n{\"type\":\"menu\",\"id\":1,\"shop_id\":1,\"version\":1,\"op\":\"delete\"}",
		`{"type":"shop","id":1,"version":1,"op":"upsert","fields":{"location":{"lat":37.5,"lon":127},"tags":["a"]},"menus":[]}`,
		`[1, "x", null]`, `{"type":"shop","fields":{"open":null}}`, "", "[", "\n\n",
	}
	g := NewGenerator(3)
	if b, err := json.Marshal(g.Shop(0).UpsertEvent()); err == nil {
		seeds = append(seeds, string(b))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		events, err := ParseEvents(body)
		if err != nil {
			if len(events) != 0 {
				t.Fatalf("events returned with error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "catalog:") && !strings.HasPrefix(err.Error(), "event ") {
				t.Fatalf("error without position or package: %v", err)
			}
			return
		}
		// Accepted events are valid and survive a round trip unchanged.
		for i, ev := range events {
			if err := ev.Validate(); err != nil {
				t.Fatalf("event %d accepted but invalid: %v", i, err)
			}
		}
		again, err := json.Marshal(events)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseEvents(again)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", again, err)
		}
		if !reflect.DeepEqual(back, events) {
			t.Fatalf("round trip changed events:\n%+v\n%+v", events, back)
		}
	})
}

func TestIsHotShopUpdate(t *testing.T) {
	m, name := 30, "새이름"
	cases := []struct {
		ev   Event
		want bool
	}{
		{ShopUpsertEvent(1, 2, &ShopFields{DeliveryMinutes: &m}), true},
		{ShopUpsertEvent(1, 2, &ShopFields{Name: &name}), false},
		{ShopDeleteEvent(1, 2), false},
		{MenuUpsertEvent(1, 1000, 2, &MenuFields{Price: &m}), false},
	}
	for i, c := range cases {
		if got := c.ev.IsHotShopUpdate(); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}
