package searchbench

import (
	"math"
	"testing"

	"github.com/baedal/baedal/catalog"
)

func judgedShop(name string, open bool, menus ...string) *catalog.ShopState {
	s := &catalog.ShopState{Shop: catalog.Shop{ID: 1, Name: name, Open: open, Location: catalog.GeoPoint{Lat: 37.5, Lon: 127.0}, DeliveryRadiusKm: 2}}
	for _, m := range menus {
		s.Menus = append(s.Menus, catalog.Menu{Name: m})
	}
	return s
}

func TestJudgeShopFollowsTheWrittenRules(t *testing.T) {
	const lat, lon = 37.5, 127.0
	for _, tc := range []struct {
		name  string
		shop  *catalog.ShopState
		words []string
		lat   float64
		want  int
	}{
		{"brand in the name", judgedShop("BBQ치킨 역삼점", true, "황금올리브치킨"), []string{"비비큐"}, lat, gradeNameMatch},
		{"dish in the name", judgedShop("행복치킨", true, "콜라"), []string{"치킨"}, lat, gradeNameMatch},
		{"menu only", judgedShop("피자나라", true, "치킨윙"), []string{"치킨"}, lat, gradeMenuMatch},
		{"English word, Korean menu", judgedShop("버거집", true, "치즈버거"), []string{"burger"}, lat, gradeNameMatch},
		{"closed", judgedShop("행복치킨", false, "후라이드치킨"), []string{"치킨"}, lat, gradeClosed},
		{"no match", judgedShop("행복피자", true, "콜라"), []string{"치킨"}, lat, 0},
		{"two words in one menu", judgedShop("피자하우스", true, "불고기피자"), []string{"불고기", "피자"}, lat, gradeNameMatch},
		{"two words in two menus, none in the name", judgedShop("맛집", true, "불고기", "페퍼로니피자"), []string{"불고기", "피자"}, lat, 0},
		{"two words in one menu, none in the name", judgedShop("맛집", true, "불고기피자"), []string{"불고기", "피자"}, lat, gradeMenuMatch},
		// 0.03 degrees of latitude is 3.3 km, beyond the 2 km radius.
		{"out of the delivery area", judgedShop("행복치킨", true, "치킨"), []string{"치킨"}, lat + 0.03, 0},
	} {
		if got := judgeShop(tc.shop, tc.words, tc.lat, lon); got != tc.want {
			t.Errorf("%s: grade %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestNDCG(t *testing.T) {
	if got := ndcgAt(10, []int{3, 2, 0}, []int{2, 3}); got != 1 {
		t.Errorf("the ideal order: %g, want 1", got)
	}
	// Ranked [0, 3] against the ideal [3]: (2^3-1)/log2(3) over (2^3-1)/log2(2).
	if got, want := ndcgAt(10, []int{0, 3}, []int{3}), 1/math.Log2(3); math.Abs(got-want) > 1e-12 {
		t.Errorf("a relevant shop second: %g, want %g", got, want)
	}
	if got := ndcgAt(10, []int{0, 0}, nil); got != 0 {
		t.Errorf("nothing relevant: %g, want 0", got)
	}
	// Only the first k count: a relevant shop 11th adds nothing.
	ranked := make([]int, 11)
	ranked[10] = 3
	if got := ndcgAt(10, ranked, []int{3}); got != 0 {
		t.Errorf("relevant shop below the cut: %g, want 0", got)
	}
}

func TestAbsurdPairs(t *testing.T) {
	near := absurdPair{Open: true, Delivers: true, DistanceM: 300, DeliveryMinutes: 30, Rating: 4.8, ReviewCount: 200, TextScore: 3}
	far := near
	far.DistanceM = 1500
	closed := near
	closed.Open = false
	fewFives := near
	fewFives.Rating, fewFives.ReviewCount = 5, 3
	outside := near
	outside.Delivers = false
	closedOutside := closed
	closedOutside.Delivers = false
	for _, tc := range []struct {
		name string
		top  []absurdPair
		want AbsurdCounts
	}{
		{"closed above open", []absurdPair{closed, near}, AbsurdCounts{ClosedAboveOpen: 1}},
		{"open above closed", []absurdPair{near, closed}, AbsurdCounts{}},
		{"out of radius above deliverable", []absurdPair{outside, near}, AbsurdCounts{OutOfRadiusAboveDeliverable: 1}},
		{"out of radius above a closed deliverable", []absurdPair{outside, closed}, AbsurdCounts{OutOfRadiusAboveDeliverable: 1}},
		{"closed deliverable above open out of radius", []absurdPair{closed, outside}, AbsurdCounts{}},
		{"closed out of radius above open deliverable counts once", []absurdPair{closedOutside, near}, AbsurdCounts{ClosedAboveOpen: 1}},
		{"closed above open, both out of radius", []absurdPair{closedOutside, outside}, AbsurdCounts{ClosedAboveOpen: 1}},
		{"out of radius with a better text match is no pair", []absurdPair{func() absurdPair { o := outside; o.TextScore = 9; return o }(), near}, AbsurdCounts{}},
		{"far and out of radius above near counts once", []absurdPair{func() absurdPair { f := far; f.Delivers = false; return f }(), near}, AbsurdCounts{OutOfRadiusAboveDeliverable: 1}},
		{"far above near", []absurdPair{far, near}, AbsurdCounts{FarAboveNear: 1}},
		{"near above far", []absurdPair{near, far}, AbsurdCounts{}},
		{"a 5.0 on 3 reviews above a 4.8 on 200", []absurdPair{fewFives, near}, AbsurdCounts{LowReviewFiveAboveMany: 1}},
		{"different text scores are no pair", []absurdPair{func() absurdPair { f := far; f.TextScore = 9; return f }(), near}, AbsurdCounts{}},
		{"a far shop much better rated is no pair", []absurdPair{func() absurdPair { f := far; f.Rating, f.ReviewCount = 5, 2000; return f }(), near}, AbsurdCounts{}},
	} {
		if got := absurdPairs(tc.top); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The judged set parses, names known locations, is large enough and every
// query is a legal search.
func TestJudgedSet(t *testing.T) {
	set, err := loadJudgedSet()
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Queries) < 50 || len(set.Locations) < 4 {
		t.Errorf("%d queries at %d locations, want at least 50 at 4", len(set.Queries), len(set.Locations))
	}
	kinds := map[string]int{}
	for _, q := range set.Queries {
		kinds[q.Kind]++
	}
	for _, k := range []string{"dish", "phrase", "brand", "english"} {
		if kinds[k] == 0 {
			t.Errorf("no query of kind %s", k)
		}
	}
}
