package searchbench

import (
	"math"
	"slices"
	"strings"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/query"
)

// The judging rules of the relevance check, written so that a person can
// apply them to a shop by hand (docs/search.md, "Offline relevance check").
// They read the shop's data, never a ranking:
//
//   - A word is in a text when the text, in lower case, contains the word
//     or one of its synonyms (query.Synonyms) in lower case.
//   - Name match: every word of the query is in the shop name or in one
//     of its menu names, and at least one is in the shop name (the shop's
//     name or brand says it sells this).
//   - Menu match: one menu name holds every word of the query.
//   - Deliverable: the user is within the shop's delivery radius.
//
// Grades: 3 open, deliverable, name match; 2 open, deliverable, menu match;
// 1 closed, deliverable, name or menu match; 0 otherwise, so a shop outside
// its delivery radius (shown since searches stopped filtering it out) is 0
// whether open or not: it cannot take this address's order.
const (
	gradeNameMatch = 3
	gradeMenuMatch = 2
	gradeClosed    = 1
)

// judgeShop grades shop s for the query words at (lat, lon).
func judgeShop(s *catalog.ShopState, words []string, lat, lon float64) int {
	if s.Deleted || len(words) == 0 || !deliverable(s.Shop, lat, lon) {
		return 0
	}
	name := strings.ToLower(s.Shop.Name)
	inName, inNameOrMenu, oneMenuHoldsAll := 0, 0, false
	for _, m := range s.Menus {
		menu := strings.ToLower(m.Name)
		all := true
		for _, w := range words {
			if !contains(menu, w) {
				all = false
			}
		}
		oneMenuHoldsAll = oneMenuHoldsAll || all
	}
	for _, w := range words {
		switch {
		case contains(name, w):
			inName++
			inNameOrMenu++
		case anyMenuContains(s.Menus, w):
			inNameOrMenu++
		}
	}
	nameMatch := inName > 0 && inNameOrMenu == len(words)
	switch {
	case !nameMatch && !oneMenuHoldsAll:
		return 0
	case !s.Shop.Open:
		return gradeClosed
	case nameMatch:
		return gradeNameMatch
	}
	return gradeMenuMatch
}

// contains reports whether text (lower case) holds word or a synonym.
func contains(text, word string) bool {
	for _, f := range query.WordForms(word, true) {
		if strings.Contains(text, strings.ToLower(f)) {
			return true
		}
	}
	return false
}

func anyMenuContains(menus []catalog.Menu, word string) bool {
	for _, m := range menus {
		if contains(strings.ToLower(m.Name), word) {
			return true
		}
	}
	return false
}

// deliverable reports whether (lat, lon) is within the shop's delivery
// radius, on the sphere (the same arc distance the search filters with,
// to within centimetres).
func deliverable(s catalog.Shop, lat, lon float64) bool {
	return distanceM(s, lat, lon) <= s.DeliveryRadiusKm*1000
}

func distanceM(s catalog.Shop, lat, lon float64) float64 {
	const r = 6371008.7714
	toRad := math.Pi / 180
	dLat, dLon := (s.Location.Lat-lat)*toRad, (s.Location.Lon-lon)*toRad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat*toRad)*math.Cos(s.Location.Lat*toRad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * r * math.Asin(math.Sqrt(a))
}

// The absurd pairs of a top 10: shop a ranked above shop b when a person
// would put b first. Each rule holds the other signals about equal, so that
// the pair is absurd whatever weights a ranking gives them. The Bayesian
// rating of these rules is the judge's own: 4.0 stars worth 50 reviews.
const (
	judgePriorRating  = 4.0
	judgePriorReviews = 50
)

// absurdPair is a top-10 shop as the absurd rules read it: the shop's data
// from the response, and the text score the ranking gave it.
type absurdPair struct {
	Open bool
	// Delivers: the user is within the shop's delivery radius (the
	// response's mark).
	Delivers        bool
	DistanceM       float64
	DeliveryMinutes int
	Rating          float64
	ReviewCount     int
	TextScore       float64
}

// AbsurdCounts counts each kind of absurd pair over a set of top 10s.
type AbsurdCounts struct {
	// ClosedAboveOpen: a closed shop above an open one that delivers to
	// the user at least as well (both deliver, both do not, or only the
	// open one does).
	ClosedAboveOpen int `json:"closed_above_open"`
	// OutOfRadiusAboveDeliverable: with equal text scores, a shop outside
	// its delivery radius above one delivering to the user (not counted
	// again when it is also a closed shop above an open one).
	OutOfRadiusAboveDeliverable int `json:"out_of_radius_above_deliverable"`
	// FarAboveNear: with equal text scores and the same open and delivers
	// states, a
	// shop at least 1 km farther above one whose Bayesian rating is at
	// most 0.2 lower and whose delivery is at most 10 minutes slower.
	FarAboveNear int `json:"far_above_near"`
	// LowReviewFiveAboveMany: with equal text scores and the same open and
	// delivers states, a 5.0 with fewer than 10 reviews above a shop rated 4.5 or
	// more on at least 100, which is at most 200 m farther and delivers at
	// most 5 minutes slower.
	LowReviewFiveAboveMany int `json:"low_review_five_above_many"`
}

// Total is the number of absurd pairs of every kind.
func (c AbsurdCounts) Total() int {
	return c.ClosedAboveOpen + c.OutOfRadiusAboveDeliverable + c.FarAboveNear + c.LowReviewFiveAboveMany
}

func (c *AbsurdCounts) add(o AbsurdCounts) {
	c.ClosedAboveOpen += o.ClosedAboveOpen
	c.OutOfRadiusAboveDeliverable += o.OutOfRadiusAboveDeliverable
	c.FarAboveNear += o.FarAboveNear
	c.LowReviewFiveAboveMany += o.LowReviewFiveAboveMany
}

// absurdPairs counts the absurd pairs of one top 10, best first.
func absurdPairs(top []absurdPair) AbsurdCounts {
	var c AbsurdCounts
	bayes := func(s absurdPair) float64 {
		n := float64(s.ReviewCount)
		return (judgePriorReviews*judgePriorRating + n*s.Rating) / (judgePriorReviews + n)
	}
	for i, a := range top {
		for _, b := range top[i+1:] {
			if !a.Open && b.Open && (b.Delivers || !a.Delivers) {
				c.ClosedAboveOpen++
				continue
			}
			if !a.Delivers && b.Delivers && a.TextScore == b.TextScore {
				c.OutOfRadiusAboveDeliverable++
				continue
			}
			if a.Open != b.Open || a.Delivers != b.Delivers || a.TextScore != b.TextScore {
				continue
			}
			if a.DistanceM >= b.DistanceM+1000 && bayes(b) >= bayes(a)-0.2 && b.DeliveryMinutes <= a.DeliveryMinutes+10 {
				c.FarAboveNear++
			}
			if a.Rating == 5 && a.ReviewCount < 10 && b.Rating >= 4.5 && b.ReviewCount >= 100 &&
				b.DistanceM <= a.DistanceM+200 && b.DeliveryMinutes <= a.DeliveryMinutes+5 {
				c.LowReviewFiveAboveMany++
			}
		}
	}
	return c
}

// ndcgAt is the normalized discounted cumulative gain of the first k
// grades of ranked against the best order of every judged grade (all
// the grades above 0 for the query): DCG = Σ (2^g − 1) / log2(i + 1), i
// from 1. It is 0 when no shop is relevant.
func ndcgAt(k int, ranked []int, judged []int) float64 {
	dcg := func(gs []int) float64 {
		sum := 0.0
		for i, g := range gs[:min(k, len(gs))] {
			sum += (math.Pow(2, float64(g)) - 1) / math.Log2(float64(i+2))
		}
		return sum
	}
	best := slices.Clone(judged)
	slices.SortFunc(best, func(a, b int) int { return b - a })
	ideal := dcg(best)
	if ideal == 0 {
		return 0
	}
	return dcg(ranked) / ideal
}
