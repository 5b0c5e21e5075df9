package catalog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestEventStreamIsDeterministic(t *testing.T) {
	encode := func(seed uint64) []byte {
		s := NewEventStream(seed, 500)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for range 3000 {
			if err := enc.Encode(s.Next()); err != nil {
				t.Fatal(err)
			}
		}
		return buf.Bytes()
	}
	a, b := encode(9), encode(9)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed gave different streams")
	}
	if bytes.Equal(a, encode(10)) {
		t.Fatal("seeds 9 and 10 gave the same stream")
	}
}

// TestEventStreamAppliesToGeneratedStates applies a long stream to the
// generated catalog: every event must validate and apply (versions go up by
// one per aggregate), and the mix must be close to the documented one.
func TestEventStreamAppliesToGeneratedStates(t *testing.T) {
	const numShops = 2000
	const numEvents = 60000
	const seed = 5
	gen := NewGenerator(seed)
	stream := NewEventStream(seed, numShops)
	states := map[int64]*ShopState{}
	var hotShop, menuHot, coldShop, menuCreate, menuDelete, shopCreate, shopDelete int
	perShop := map[int64]int{}
	var roundTrip []Event
	for n := range numEvents {
		ev := stream.Next()
		if err := ev.Validate(); err != nil {
			t.Fatalf("event %d %+v: %v", n, ev, err)
		}
		id := ev.AggregateID()
		if id < 1 || int(id) > stream.NumShops() {
			t.Fatalf("event %d: shop id %d outside 1..%d", n, id, stream.NumShops())
		}
		perShop[id]++
		st, ok := states[id]
		if !ok {
			st = &ShopState{}
			if int(id) <= numShops { // generated catalog, loaded at version 1
				generated := gen.Shop(ShopIndex(id))
				st = &generated
			}
			states[id] = st
		}
		before := st.Version
		applied, err := st.Apply(ev)
		if err != nil || !applied {
			t.Fatalf("event %d %s: applied %v, err %v (state version %d)", n, mustJSON(t, ev), applied, err, before)
		}
		if ev.Version != before+1 || st.Version != ev.Version {
			t.Fatalf("event %d: version %d after state version %d", n, ev.Version, before)
		}
		switch {
		case ev.Type == EntityShop && ev.Op == OpDelete:
			shopDelete++
		case ev.Type == EntityShop && ev.Menus != nil:
			shopCreate++
		case ev.Type == EntityShop:
			hot := true
			for _, f := range ev.ChangedFields() {
				if v, _ := ShopFieldVolatility(f); v != Hot {
					hot = false
				}
			}
			if hot {
				hotShop++
			} else {
				coldShop++
			}
		case ev.Op == OpDelete:
			menuDelete++
		case len(ev.Menu.Missing()) == 0:
			menuCreate++
		default:
			menuHot++
		}
		if n < 500 {
			roundTrip = append(roundTrip, ev)
		}
	}
	share := func(c int) float64 { return float64(c) / numEvents }
	checks := []struct {
		name   string
		got    float64
		lo, hi float64
	}{
		{"hot shop", share(hotShop), 0.82, 0.88},
		{"menu changes", share(menuHot), 0.10, 0.14},
		{"cold shop", share(coldShop), 0.005, 0.02},
		{"menu create+delete", share(menuCreate + menuDelete), 0.005, 0.02},
		{"shop create+delete", share(shopCreate + shopDelete), 0.005, 0.02},
	}
	for _, c := range checks {
		if c.got < c.lo || c.got > c.hi {
			t.Errorf("%s share %.4f, want %.3f..%.3f", c.name, c.got, c.lo, c.hi)
		}
	}
	if shopDelete == 0 || menuDelete == 0 || stream.NumShops() <= numShops {
		t.Errorf("shop deletes %d, menu deletes %d, shops %d: want some of each and new shops", shopDelete, menuDelete, stream.NumShops())
	}
	t.Logf("hot %d, menu %d, cold %d, menu create %d, menu delete %d, shop create %d, shop delete %d, shops %d",
		hotShop, menuHot, coldShop, menuCreate, menuDelete, shopCreate, shopDelete, stream.NumShops())
	// Skew: the busiest shop gets far more than the average.
	busiest := 0
	for _, c := range perShop {
		busiest = max(busiest, c)
	}
	if avg := float64(numEvents) / float64(len(perShop)); float64(busiest) < 10*avg {
		t.Errorf("busiest shop has %d events, average %.1f: want a skewed stream", busiest, avg)
	} else {
		t.Logf("busiest shop %d events, average %.1f over %d shops", busiest, avg, len(perShop))
	}
	// Events survive the wire form.
	body, err := json.Marshal(roundTrip)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseEvents(body)
	if err != nil || len(parsed) != len(roundTrip) {
		t.Fatalf("ParseEvents of the stream: %d events, %v", len(parsed), err)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNextHotShopUpdate: hot updates only, of the initial catalog's shops
// only (the stream creates and deletes shops too), with versions increasing
// per shop, and the same sequence for the same seed.
func TestNextHotShopUpdate(t *testing.T) {
	const shops = 40
	a, b := NewEventStream(5, shops), NewEventStream(5, shops)
	last := map[int64]int64{}
	for i := range 5000 {
		ev := a.NextHotShopUpdate()
		if !ev.IsHotShopUpdate() || ev.ID < 1 || ev.ID > shops {
			t.Fatalf("event %d: %+v is not a hot update of shops 1..%d", i, ev, shops)
		}
		if ev.Version <= last[ev.ID] {
			t.Fatalf("event %d: shop %d version %d after %d", i, ev.ID, ev.Version, last[ev.ID])
		}
		last[ev.ID] = ev.Version
		if other := b.NextHotShopUpdate(); !reflect.DeepEqual(ev, other) {
			t.Fatalf("event %d differs for the same seed: %+v and %+v", i, ev, other)
		}
	}
	if len(last) < shops/2 {
		t.Errorf("only %d of %d shops updated", len(last), shops)
	}
	if a.NumShops() == shops {
		t.Error("the stream created no shop in 5000 events: the ID bound was not exercised")
	}
}
