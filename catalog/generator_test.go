package catalog

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func marshalShops(t *testing.T, g *Generator, from, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := from; i < from+n; i++ {
		if err := enc.Encode(g.Shop(i)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestGeneratorIsDeterministic(t *testing.T) {
	a := marshalShops(t, NewGenerator(42), 0, 200)
	b := marshalShops(t, NewGenerator(42), 0, 200)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed gave different shops")
	}
	c := marshalShops(t, NewGenerator(43), 0, 200)
	if bytes.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave identical shops")
	}
	// Shop i alone equals shop i in a sequence, in any order.
	g := NewGenerator(42)
	alone := marshalShops(t, g, 150, 1)
	if !bytes.Contains(a, alone) {
		t.Fatal("Shop(150) generated alone differs from the sequence")
	}
	var fromIter []byte
	for i, s := range g.Shops(3) {
		b, _ := json.Marshal(s)
		fromIter = append(fromIter, b...)
		fromIter = append(fromIter, '\n')
		if s.Shop.ID != int64(i)+1 {
			t.Errorf("Shops yields id %d at index %d", s.Shop.ID, i)
		}
	}
	if !bytes.HasPrefix(a, fromIter) {
		t.Fatal("Shops(3) differs from Shop(0..2)")
	}
}

func TestGeneratedShopsAreValidAndRealistic(t *testing.T) {
	const n = 2000
	shops := GenerateShops(7, n)
	if len(shops) != n {
		t.Fatalf("got %d shops", len(shops))
	}
	var menus, open, chicken, pizza, tteok, freeFee int
	minMenus, maxMenus := math.MaxInt, 0
	categories := map[string]int{}
	districts := map[string]int{}
	var ratingSum float64
	menuNames := map[string]int{}
	withinKm := 0
	for _, s := range shops {
		if err := s.UpsertEvent().Validate(); err != nil {
			t.Fatalf("shop %d: %v", s.Shop.ID, err)
		}
		sh := s.Shop
		if s.Version != 1 || s.Deleted {
			t.Errorf("shop %d: version %d deleted %v", sh.ID, s.Version, s.Deleted)
		}
		if sh.Location.Lat < 37.41 || sh.Location.Lat > 37.72 || sh.Location.Lon < 126.73 || sh.Location.Lon > 127.27 {
			t.Errorf("shop %d outside Seoul: %+v", sh.ID, sh.Location)
		}
		if sh.DeliveryRadiusKm < 1.5 || sh.DeliveryRadiusKm > 5 {
			t.Errorf("shop %d radius %v", sh.ID, sh.DeliveryRadiusKm)
		}
		if sh.DeliveryMinutes < 15 || sh.DeliveryMinutes > 70 {
			t.Errorf("shop %d delivery minutes %d", sh.ID, sh.DeliveryMinutes)
		}
		if sh.DeliveryFee < 0 || sh.DeliveryFee > 5000 || sh.DeliveryFee%500 != 0 {
			t.Errorf("shop %d delivery fee %d", sh.ID, sh.DeliveryFee)
		}
		if sh.MinOrder < 8000 || sh.MinOrder > 20000 {
			t.Errorf("shop %d min order %d", sh.ID, sh.MinOrder)
		}
		if sh.Rating < 3 || sh.Rating > 5 || math.Abs(sh.Rating*10-math.Round(sh.Rating*10)) > 1e-9 {
			t.Errorf("shop %d rating %v", sh.ID, sh.Rating)
		}
		if !strings.HasSuffix(sh.District, "구") || !strings.HasPrefix(sh.Address, "서울특별시 "+sh.District+" ") {
			t.Errorf("shop %d district %q address %q", sh.ID, sh.District, sh.Address)
		}
		if len(s.Menus) < 3 || len(s.Menus) > 150 {
			t.Errorf("shop %d has %d menus", sh.ID, len(s.Menus))
		}
		minMenus, maxMenus = min(minMenus, len(s.Menus)), max(maxMenus, len(s.Menus))
		menus += len(s.Menus)
		if sh.Open {
			open++
		}
		if sh.DeliveryFee == 0 {
			freeFee++
		}
		categories[sh.Category]++
		districts[sh.District]++
		ratingSum += sh.Rating
		// Distance to the nearest gu center: most shops within 1.5 km.
		for _, d := range seoulDistricts {
			if d.name == sh.District && distanceKm(d.center, sh.Location) <= 1.5 {
				withinKm++
			}
		}
		has := func(word string) bool {
			if strings.Contains(sh.Name, word) {
				return true
			}
			for _, m := range s.Menus {
				if strings.Contains(m.Name, word) {
					return true
				}
			}
			return false
		}
		if has("치킨") {
			chicken++
		}
		if has("피자") {
			pizza++
		}
		if has("떡볶이") {
			tteok++
		}
		seen := map[string]bool{}
		for k, m := range s.Menus {
			if m.ID != sh.ID*1000+int64(k) || m.ShopID != sh.ID {
				t.Errorf("shop %d menu %d has id %d shop %d", sh.ID, k, m.ID, m.ShopID)
			}
			if m.Price < 2000 || m.Price > 45000 || m.Price%500 != 0 {
				t.Errorf("menu %d price %d", m.ID, m.Price)
			}
			if m.CookMinutes < 5 || m.CookMinutes > 40 {
				t.Errorf("menu %d cook minutes %d", m.ID, m.CookMinutes)
			}
			if m.ExtraFee != 0 && (m.ExtraFee < 500 || m.ExtraFee > 3000) {
				t.Errorf("menu %d extra fee %d", m.ID, m.ExtraFee)
			}
			if seen[m.Name] {
				t.Errorf("shop %d sells %q twice", sh.ID, m.Name)
			}
			seen[m.Name] = true
			menuNames[m.Name]++
		}
	}
	avgMenus := float64(menus) / n
	if avgMenus < 25 || avgMenus > 35 {
		t.Errorf("average menus per shop %.1f, want 25..35", avgMenus)
	}
	if minMenus > 10 || maxMenus < 80 {
		t.Errorf("menus per shop range %d..%d, want a skewed spread (min <= 10, max >= 80)", minMenus, maxMenus)
	}
	if r := float64(open) / n; r < 0.85 || r > 0.95 {
		t.Errorf("open share %.2f, want about 0.9", r)
	}
	if r := ratingSum / n; r < 4.4 || r > 4.9 {
		t.Errorf("average rating %.2f, want high (4.4..4.9)", r)
	}
	if r := float64(withinKm) / n; r < 0.6 {
		t.Errorf("only %.2f of shops within 1.5 km of their gu center", r)
	}
	if freeFee == 0 || freeFee > n/3 {
		t.Errorf("%d shops with free delivery", freeFee)
	}
	if len(categories) != 12 || len(districts) != 25 {
		t.Errorf("got %d categories and %d districts, want 12 and 25", len(categories), len(districts))
	}
	if categories["치킨"] < categories["도시락"] {
		t.Errorf("치킨 shops %d fewer than 도시락 shops %d", categories["치킨"], categories["도시락"])
	}
	if chicken < n/10 {
		t.Errorf("치킨 in %d of %d shops, want >= 10%%", chicken, n)
	}
	if pizza < n/20 || tteok < n/20 {
		t.Errorf("피자 in %d shops, 떡볶이 in %d shops, want >= 5%% each", pizza, tteok)
	}
	// Compound menu names that make morphological analysis matter.
	for _, name := range []string{"페퍼로니피자", "양념치킨", "후라이드치킨", "로제떡볶이", "짜장면", "짬뽕", "김치찌개", "돈까스", "마라탕", "족발", "보쌈", "아메리카노", "치즈케이크"} {
		if menuNames[name] == 0 {
			t.Errorf("no shop sells %s", name)
		}
	}
	// Rare words: present, but in few shops.
	if c := menuNames["홍어삼합"] + menuNames["과메기"] + menuNames["마라롱샤"] + menuNames["우니동"]; c > 40 {
		t.Errorf("rare menus appear %d times in 2000 shops", c)
	}
}

func distanceKm(a, b GeoPoint) float64 {
	dLat := (a.Lat - b.Lat) * 111.32
	dLon := (a.Lon - b.Lon) * 111.32 * math.Cos(a.Lat*math.Pi/180)
	return math.Hypot(dLat, dLon)
}

func TestRareWordsExistInBigCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 20,000 shops")
	}
	g := NewGenerator(11)
	counts := map[string]int{}
	rareWords := []string{"홍어삼합", "과메기", "마라롱샤", "우니동", "불도장", "히츠마부시"}
	common := 0
	for _, s := range g.Shops(20000) {
		hasChicken := strings.Contains(s.Shop.Name, "치킨")
		for _, m := range s.Menus {
			hasChicken = hasChicken || strings.Contains(m.Name, "치킨")
			for _, w := range rareWords {
				if m.Name == w {
					counts[w]++
				}
			}
		}
		if hasChicken {
			common++
		}
	}
	if common < 2000 {
		t.Errorf("치킨 matches %d of 20,000 shops, want thousands", common)
	}
	total := 0
	for _, w := range rareWords {
		total += counts[w]
		if counts[w] > 60 {
			t.Errorf("rare word %s in %d shops", w, counts[w])
		}
	}
	if total == 0 {
		t.Errorf("no rare word in 20,000 shops: %v", counts)
	}
	t.Logf("치킨 shops: %d; rare words: %v", common, counts)
}

func TestGeneratorIsSafeForConcurrentUse(t *testing.T) {
	g := NewGenerator(8)
	want := marshalShops(t, g, 0, 50)
	results := make(chan []byte, 2)
	for range 2 {
		go func() {
			var buf bytes.Buffer
			for i := range 50 {
				b, _ := json.Marshal(g.Shop(i))
				buf.Write(b)
				buf.WriteByte('\n')
			}
			results <- buf.Bytes()
		}()
	}
	for range 2 {
		if got := <-results; !bytes.Equal(got, want) {
			t.Fatal("concurrent generation differs")
		}
	}
}
