// Package rank is the `relevance` order of a search: one formula over a
// shop's text match, availability now (open, and delivering to the user),
// distance, delivery minutes and a Bayesian-averaged rating, with its weights in one Config. Every layout
// evaluates the same formula (docs/search.md): the nested and split layouts
// as the Painless sort script of SortScript, the hot layout in the
// baedal-hot plugin (HotRankSortBuilder, reading the hot signals from its
// table), and Go here (Score) for explain and tests.
//
// Invariant: Score, SortScript and the plugin add the same double-precision
// terms in the same order (open, delivers, text, distance, eta, rating) with only
// +, -, *, / and comparisons, so the three give the same bits for the same
// signals and the layouts the same order; ties are broken by shop id.
package rank

import (
	"flag"
	"fmt"
	"math"
)

// Config holds the weights of the relevance formula and the shape of the
// text query that feeds it. Every weight is in points of the total score.
type Config struct {
	// OpenWeight is added when the shop is open now. It is larger than
	// every term below it together can be, so among shops that deliver
	// alike an open shop is always above a closed one (a tier, not a
	// trade-off).
	OpenWeight float64
	// DeliversWeight is added, with a user location, when the user is
	// within the shop's delivery radius. It is larger than OpenWeight and
	// every other term together, so a shop that delivers is above every
	// shop that does not, open or not: it takes this address's order when
	// it opens, the other never does (docs/search.md, "Availability").
	DeliversWeight float64
	// TextWeight multiplies the text score: the sum of the boosts of the
	// text clauses the shop's best menu matched.
	TextWeight float64
	// DistanceWeight is the points of a shop at the user's location,
	// decaying linearly to 0 at DistanceZeroM metres and on below 0
	// beyond (not clamped, unlike OpenSearch's "linear" decay), so a metre
	// is worth the same at any distance: shops outside their delivery
	// radius can be as far as the location prefilter
	// (catalog.MaxDeliveryRadiusKm, 100 km: -190 points with the
	// defaults), and with a clamp every shop past 5 km tied on distance.
	// The tiers hold while DistanceWeight × 100 km / DistanceZeroM stays
	// well below OpenWeight.
	DistanceWeight float64
	DistanceZeroM  float64
	// ETAWeight is the points of a shop delivering in 0 minutes, decaying
	// linearly to 0 at ETAZeroMinutes of delivery_minutes.
	ETAWeight      float64
	ETAZeroMinutes float64
	// RatingWeight multiplies the Bayesian-averaged rating, in stars:
	// (PriorReviews*PriorRating + reviews*rating) / (PriorReviews + reviews).
	RatingWeight float64
	PriorRating  float64
	PriorReviews float64
	// ShopNameBoost is the text clause matching the whole text as a phrase
	// in the shop name (a shop-name or brand match); 0 leaves it out.
	ShopNameBoost float64
	// PhraseBoost is the text clause matching the whole text as a phrase in
	// a menu name (a phrase beats scattered words); 0 leaves it out.
	PhraseBoost float64
	// Synonyms expands each word of the text with query.Synonyms (버거 and
	// burger, 비비큐 and BBQ).
	Synonyms bool
}

// Defaults are the weights of docs/search.md, chosen so that, within an
// availability tier: 1 km of distance is 2 points; 10 delivery minutes 0.5; a
// tenth of a star of Bayesian rating 0.5; the whole text in the shop name
// 12 (more than the distance term's whole range); a word's whole terms in
// a menu name 0.75, its n-grams only 0.125.
func Defaults() Config {
	return Config{
		DeliversWeight: 2000,
		OpenWeight:     1000,
		TextWeight:     0.25,
		// 10 points at the door, 0 at 5 km (the catalog's largest radius).
		DistanceWeight: 10, DistanceZeroM: 5000,
		ETAWeight: 4.5, ETAZeroMinutes: 90,
		RatingWeight: 5, PriorRating: 4.0, PriorReviews: 50,
		ShopNameBoost: 48, PhraseBoost: 4,
		Synonyms: true,
	}
}

// TextThenRating reproduces the order `relevance` had before this formula:
// the best menu's text score, then the raw rating, then the id. No open
// tier, distance or delivery time, no prior, no phrase or shop-name clause
// and no synonyms. A text score step (0.5) is worth 8 points, more than the
// whole rating range (5), so the text decides first. That order only ever
// showed the shops delivering to the user (the delivery-area filter dropped
// the others); its delivers tier, above any text score, puts them first,
// so its pages begin with exactly the shops it showed, and the shops it
// did not show come after them.
func TextThenRating() Config {
	return Config{DeliversWeight: 100000, TextWeight: 16, RatingWeight: 1, DistanceZeroM: 1, ETAZeroMinutes: 1}
}

// Flags binds the weights under the prefix "rank-".
func (c *Config) Flags(fs *flag.FlagSet) {
	f := func(p *float64, name, usage string) { fs.Float64Var(p, "rank-"+name, *p, usage) }
	f(&c.DeliversWeight, "delivers-weight", "relevance points of a shop delivering to the user's location (a tier above open and every other signal)")
	f(&c.OpenWeight, "open-weight", "relevance points of a shop open now (a tier above every signal but delivers)")
	f(&c.TextWeight, "text-weight", "relevance points per point of text score")
	f(&c.DistanceWeight, "distance-weight", "relevance points of a shop at the user's location, decaying linearly")
	f(&c.DistanceZeroM, "distance-zero-m", "metres at which the distance points reach 0")
	f(&c.ETAWeight, "eta-weight", "relevance points of 0 delivery minutes, decaying linearly")
	f(&c.ETAZeroMinutes, "eta-zero-minutes", "delivery minutes at which the delivery-time points reach 0")
	f(&c.RatingWeight, "rating-weight", "relevance points per star of the Bayesian-averaged rating")
	f(&c.PriorRating, "prior-rating", "the Bayesian prior's mean rating, in stars")
	f(&c.PriorReviews, "prior-reviews", "the Bayesian prior's weight, in reviews")
	f(&c.ShopNameBoost, "shop-name-boost", "text score of the whole text as a phrase in the shop name (0: off)")
	f(&c.PhraseBoost, "phrase-boost", "text score of the whole text as a phrase in a menu name (0: off)")
	fs.BoolVar(&c.Synonyms, "rank-synonyms", c.Synonyms, "expand query words with the Korean/English food synonyms")
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	for _, w := range []struct {
		name string
		v    float64
	}{
		{"delivers-weight", c.DeliversWeight}, {"open-weight", c.OpenWeight}, {"text-weight", c.TextWeight}, {"distance-weight", c.DistanceWeight},
		{"eta-weight", c.ETAWeight}, {"rating-weight", c.RatingWeight}, {"prior-reviews", c.PriorReviews},
		{"shop-name-boost", c.ShopNameBoost}, {"phrase-boost", c.PhraseBoost},
	} {
		if math.IsNaN(w.v) || math.IsInf(w.v, 0) || w.v < 0 || w.v > 1e6 {
			return fmt.Errorf("rank-%s: got %g, allowed: 0..1000000", w.name, w.v)
		}
	}
	switch {
	case !(c.DistanceZeroM > 0 && c.DistanceZeroM <= 1e7):
		return fmt.Errorf("rank-distance-zero-m: got %g, allowed: more than 0, at most 10000000", c.DistanceZeroM)
	case !(c.ETAZeroMinutes > 0 && c.ETAZeroMinutes <= 1e4):
		return fmt.Errorf("rank-eta-zero-minutes: got %g, allowed: more than 0, at most 10000", c.ETAZeroMinutes)
	case !(c.PriorRating >= 0 && c.PriorRating <= 5):
		return fmt.Errorf("rank-prior-rating: got %g, allowed: 0..5", c.PriorRating)
	}
	return nil
}

// Signals are what the formula reads of one shop for one search.
type Signals struct {
	// HasText: the search has text; Text is then the best matched menu's
	// text score (0 without text).
	HasText bool
	Text    float64
	Open    bool
	// HasLocation: the search has a user location; DistanceM is then the
	// arc distance from it to the shop in metres, and Delivers whether it
	// is within the shop's delivery radius.
	HasLocation     bool
	DistanceM       float64
	Delivers        bool
	DeliveryMinutes int
	Rating          float64
	ReviewCount     int
}

// Contributions are each signal's points and their sum, as explain shows
// them.
type Contributions struct {
	// TextScore is the text score the Text points come from.
	TextScore float64 `json:"text_score"`
	Open      float64 `json:"open"`
	Delivers  float64 `json:"delivers"`
	Text      float64 `json:"text"`
	Distance  float64 `json:"distance"`
	ETA       float64 `json:"eta"`
	Rating    float64 `json:"rating"`
	Total     float64 `json:"total"`
	// BayesRating is the rating the Rating points are computed from, in
	// stars.
	BayesRating float64 `json:"bayes_rating"`
}

// Score evaluates the formula. It mirrors SortScript and the plugin's
// HotRankSortBuilder.score operation for operation.
func (c Config) Score(s Signals) Contributions {
	var out Contributions
	if s.Open {
		out.Open = c.OpenWeight
	}
	// Explicit float64 conversions round every product, as Java does: Go
	// may otherwise fuse a multiply and an add.
	if s.HasText {
		out.TextScore = s.Text
		out.Text = float64(c.TextWeight * s.Text)
	}
	if s.HasLocation {
		if s.Delivers {
			out.Delivers = c.DeliversWeight
		}
		out.Distance = float64(c.DistanceWeight * (1 - float64(s.DistanceM/c.DistanceZeroM)))
	}
	out.ETA = float64(c.ETAWeight * positive(1-float64(float64(s.DeliveryMinutes)/c.ETAZeroMinutes)))
	out.BayesRating = c.BayesRating(s.Rating, s.ReviewCount)
	out.Rating = float64(c.RatingWeight * out.BayesRating)
	out.Total = out.Open + out.Delivers + out.Text + out.Distance + out.ETA + out.Rating
	return out
}

// BayesRating is the rating pulled toward PriorRating by a prior worth
// PriorReviews reviews; a shop with no reviews and no prior keeps its own.
func (c Config) BayesRating(rating float64, reviews int) float64 {
	n := float64(reviews)
	if c.PriorReviews+n > 0 {
		return (float64(c.PriorReviews*c.PriorRating) + float64(n*rating)) / (c.PriorReviews + n)
	}
	return rating
}

func positive(x float64) float64 {
	if x > 0 {
		return x
	}
	return 0
}

// Params are the formula's parameters as the Painless script and the
// plugin read them (JSON numbers), plus the search's own: has_text, and
// has_loc with lat and lon.
func (c Config) Params(hasText bool, lat, lon *float64) map[string]any {
	p := map[string]any{
		"w_open": c.OpenWeight, "w_delivers": c.DeliversWeight, "w_text": c.TextWeight,
		"w_dist": c.DistanceWeight, "dist_zero": c.DistanceZeroM,
		"w_eta": c.ETAWeight, "eta_zero": c.ETAZeroMinutes,
		"w_rating": c.RatingWeight, "prior_rating": c.PriorRating, "prior_reviews": c.PriorReviews,
		"has_text": hasText, "has_loc": lat != nil && lon != nil,
	}
	if lat != nil && lon != nil {
		p["lat"], p["lon"] = *lat, *lon
	}
	return p
}

// SortScript is the formula in Painless over a shop document's fields
// (nested root or split shop), its text score given by textScore, a
// Painless expression: "_score" on the nested layout, the carried score on
// split. Numbers come from params as JSON (an Integer for a whole number),
// so every operation on them has a double on one side. A shop delivers
// when the arc distance is at most its delivery_radius_km × 1000, the
// delivery-area filter's test (DeliversScript).
func SortScript(textScore string) string {
	return "double open = doc['open'].value ? (double) params.w_open : 0.0;" +
		" double text = params.has_text ? params.w_text * (double) (" + textScore + ") : 0.0;" +
		" double delivers = 0.0; double dist = 0.0;" +
		" if (params.has_loc) { double m = doc['location'].arcDistance(params.lat, params.lon);" +
		" if (doc['delivery_radius_km'].size() > 0 && m <= doc['delivery_radius_km'].value * 1000) { delivers = (double) params.w_delivers; }" +
		" dist = params.w_dist * (1.0 - m / (double) params.dist_zero); }" +
		" double y = 1.0 - (double) doc['delivery_minutes'].value / (double) params.eta_zero;" +
		" double eta = params.w_eta * (y > 0 ? y : 0.0);" +
		" double n = (double) doc['review_count'].value; double k = (double) params.prior_reviews;" +
		" double bayes = k + n > 0 ? (k * params.prior_rating + n * doc['rating'].value) / (k + n) : doc['rating'].value;" +
		" double rating = params.w_rating * bayes;" +
		" return open + delivers + text + dist + eta + rating;"
}

// DeliversScript is the Painless test of "the point (params.lat,
// params.lon) is within the shop's delivery radius", on a shop document
// (nested root, split shop, hot menu root): the delivery-area filter of
// open_now and the `delivers` mark of every hit. A shop without a location
// or a radius delivers nowhere. The plugin's baedal_within_delivery_radius
// and HotRankSortBuilder run the same test natively.
const DeliversScript = "doc['location'].size() > 0 && doc['delivery_radius_km'].size() > 0 && doc['location'].arcDistance(params.lat, params.lon) <= doc['delivery_radius_km'].value * 1000"
