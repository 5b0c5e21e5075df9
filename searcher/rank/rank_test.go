package rank

import (
	"flag"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestBayesRatingPullsTowardThePrior(t *testing.T) {
	c := Defaults() // 4.0 stars worth 50 reviews
	for _, tc := range []struct {
		rating  float64
		reviews int
		want    float64
	}{
		{5.0, 0, 4.0},        // no reviews: the prior
		{5.0, 50, 4.5},       // as many reviews as the prior: halfway
		{4.5, 100, 13.0 / 3}, // (200 + 450) / 150
		{3.0, 50, 3.5},
	} {
		if got := c.BayesRating(tc.rating, tc.reviews); got != tc.want {
			t.Errorf("BayesRating(%g, %d) = %g, want %g", tc.rating, tc.reviews, got, tc.want)
		}
	}
	if got := TextThenRating().BayesRating(4.7, 0); got != 4.7 {
		t.Errorf("without a prior and reviews the rating is kept: got %g, want 4.7", got)
	}
}

// randomShop draws signals over the catalog's ranges: one shop in five
// outside its delivery radius, anywhere the location prefilter lets
// through (up to 100 km).
func randomShop(rng *rand.Rand) Signals {
	if rng.IntN(5) == 0 {
		s := deliveringShop(rng)
		s.Delivers, s.DistanceM = false, rng.Float64()*100_000
		return s
	}
	return deliveringShop(rng)
}

// deliveringShop draws a shop delivering to the user (within 5 km, the
// catalog's largest radius).
func deliveringShop(rng *rand.Rand) Signals {
	return Signals{
		HasText: true, Text: float64(rng.IntN(60)) / 2, Open: rng.IntN(10) > 0,
		HasLocation: true, DistanceM: rng.Float64() * 5000, Delivers: true, DeliveryMinutes: 15 + rng.IntN(56),
		Rating: 3 + float64(rng.IntN(21))/10, ReviewCount: rng.IntN(3000),
	}
}

// The default weights keep the promises docs/search.md makes, whatever the
// other signals: a shop delivering to the user is above one that does not;
// among shops delivering alike, an open shop is above a closed one; with
// equal text, a
// shop 1 km nearer and about as good is above; a 5.0 on few reviews is
// below a 4.5+ on many when about as near and fast. These are the absurd
// pairs bench search counts.
func TestDefaultWeightsAvoidTheAbsurdPairs(t *testing.T) {
	c := Defaults()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200_000 {
		a, b := randomShop(rng), randomShop(rng)
		if !a.Delivers && b.Delivers && c.Score(a).Total >= c.Score(b).Total {
			t.Fatalf("case %d: out of radius %+v scores %g, not below delivering %+v at %g", i, a, c.Score(a).Total, b, c.Score(b).Total)
		}
		if !a.Open && b.Open && a.Delivers == b.Delivers && c.Score(a).Total >= c.Score(b).Total {
			t.Fatalf("case %d: closed %+v scores %g, not below open %+v at %g", i, a, c.Score(a).Total, b, c.Score(b).Total)
		}
		b.Text, b.Open, b.Delivers = a.Text, a.Open, a.Delivers
		// b near: a at least 1 km farther, b's Bayesian rating at most 0.2
		// lower, its delivery at most 10 minutes slower.
		if a.DistanceM >= b.DistanceM+1000 && c.BayesRating(b.Rating, b.ReviewCount) >= c.BayesRating(a.Rating, a.ReviewCount)-0.2 &&
			b.DeliveryMinutes <= a.DeliveryMinutes+10 && c.Score(a).Total >= c.Score(b).Total {
			t.Fatalf("case %d: far %+v (%+v) not below near %+v (%+v)", i, a, c.Score(a), b, c.Score(b))
		}
		a.Rating, a.ReviewCount = 5, rng.IntN(10)
		b.Rating, b.ReviewCount = 4.5+float64(rng.IntN(6))/10, 100+rng.IntN(5000)
		b.DistanceM = a.DistanceM + rng.Float64()*200
		b.DeliveryMinutes = a.DeliveryMinutes + rng.IntN(6)
		if c.Score(a).Total >= c.Score(b).Total {
			t.Fatalf("case %d: 5.0 on %d reviews %+v not below %g on %d %+v", i, a.ReviewCount, c.Score(a), b.Rating, b.ReviewCount, c.Score(b))
		}
	}
}

// TextThenRating orders the shops delivering to the user first, then by
// text score, then rating: the order relevance had before, which showed
// only the first ones.
func TestTextThenRatingIsLexicographic(t *testing.T) {
	c := TextThenRating()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		a, b := randomShop(rng), randomShop(rng)
		a.Rating, b.Rating = float64(rng.IntN(51))/10, float64(rng.IntN(51))/10
		want := (a.Delivers && !b.Delivers) ||
			(a.Delivers == b.Delivers && (a.Text > b.Text || (a.Text == b.Text && a.Rating > b.Rating)))
		if got := c.Score(a).Total > c.Score(b).Total; got != want {
			t.Fatalf("%+v above %+v: got %v, want %v", a, b, got, want)
		}
	}
}

func TestScoreAddsItsContributions(t *testing.T) {
	c := Defaults()
	s := Signals{HasText: true, Text: 6, Open: true, HasLocation: true, DistanceM: 2500, Delivers: true, DeliveryMinutes: 45, Rating: 4.5, ReviewCount: 50}
	got := c.Score(s)
	// 1000 open + 2000 delivers + 0.25*6 + 10*(1-2500/5000) + 4.5*(1-45/90) + 5*4.25.
	want := Contributions{TextScore: 6, Open: 1000, Delivers: 2000, Text: 1.5, Distance: 5, ETA: 2.25, BayesRating: 4.25, Rating: c.RatingWeight * 4.25}
	want.Total = want.Open + want.Delivers + want.Text + want.Distance + want.ETA + want.Rating
	if got != want {
		t.Errorf("Score = %+v, want %+v", got, want)
	}
	outside := s
	outside.Delivers = false
	if got := c.Score(outside); got.Delivers != 0 || got.Total != want.Total-2000 {
		t.Errorf("outside its radius a shop loses the delivers points only: got %+v", got)
	}
	far := s
	far.DistanceM, far.DeliveryMinutes = 7000, 120
	if got := c.Score(far); math.Abs(got.Distance-(-4)) > 1e-12 || got.ETA != 0 {
		t.Errorf("beyond the zero points distance goes on below 0 and delivery time stops at 0, got distance %g, eta %g", got.Distance, got.ETA)
	}
	none := Signals{Text: 6, DistanceM: 100, Delivers: true}
	if got := c.Score(none); got.Text != 0 || got.Distance != 0 || got.Delivers != 0 {
		t.Errorf("without text or location those terms are 0, got %+v", got)
	}
}

// Every params key the Painless script reads is one Params sets, and the
// reverse: a misspelt key would fail every search on nested and split.
func TestSortScriptReadsTheParams(t *testing.T) {
	lat, lon := 37.5, 127.0
	params := Defaults().Params(true, &lat, &lon)
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`params\.([a-z_]+)`).FindAllStringSubmatch(SortScript("_score"), -1) {
		read[m[1]] = true
		if _, ok := params[m[1]]; !ok {
			t.Errorf("the script reads params.%s, which Params does not set", m[1])
		}
	}
	for k := range params {
		if !read[k] {
			t.Errorf("Params sets %s, which the script never reads", k)
		}
	}
	if p := Defaults().Params(false, nil, nil); p["has_loc"] != false || p["lat"] != nil {
		t.Errorf("without a location: %v", p)
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		flag   string
	}{
		{func(c *Config) { c.OpenWeight = -1 }, "rank-open-weight"},
		{func(c *Config) { c.DeliversWeight = math.Inf(1) }, "rank-delivers-weight"},
		{func(c *Config) { c.DistanceZeroM = 0 }, "rank-distance-zero-m"},
		{func(c *Config) { c.ETAZeroMinutes = -5 }, "rank-eta-zero-minutes"},
		{func(c *Config) { c.PriorRating = 6 }, "rank-prior-rating"},
	} {
		c := Defaults()
		tc.change(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.flag+":") {
			t.Errorf("Validate() = %v, want an error naming %s", err, tc.flag)
		}
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		d := Defaults()
		d.Flags(fs)
		if fs.Lookup(tc.flag) == nil {
			t.Errorf("no flag %s", tc.flag)
		}
	}
	for _, c := range []Config{Defaults(), TextThenRating()} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
