package searcher

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher/rank"
)

const relevanceShops = 3000

// TestRelevance loads one catalog into every layout and checks synonyms and
// name matches on it, then the order while shops close and reopen.
func TestRelevance(t *testing.T) {
	st := stacktest.Require(t)
	osc, idx := openIndex(t, st.OpenSearchURLs)
	kinds := stacktest.Layouts(t, osc)
	states := generateStates(relevanceShops, 0)
	loadLayouts(t, osc, idx, kinds, states)
	// The test is about order, not latency: on a busy machine (the CI
	// runner, a shared one) the 5 s default deadline failed searches that
	// were only slow.
	cfg := Defaults()
	cfg.Timeout = 30 * time.Second
	s := newSearcher(osc, idx, cfg, kinds)
	t.Run("synonyms and name matches", func(t *testing.T) { checkSynonymsAndNameMatches(t, s, kinds, states) })
	t.Run("while shops close and reopen", func(t *testing.T) {
		checkRelevanceWhileShopsCloseAndReopen(t, s, kinds, states, func(k layout.Kind, changed map[int64]*catalog.ShopState) {
			writeDocs(t, osc, idx, k, changed)
		})
	})
}

// checkRelevanceWhileShopsCloseAndReopen holds every layout to one order
// under sort=relevance with every signal in play (text, location, open,
// delivery minutes, rating and reviews), while shops close, reopen and
// change their hot fields between rounds, written by write while searches
// run. In each round every layout returns the same pages with the same
// delivers marks, sorted by the same totals to the bit (Painless on nested
// and split, Java in the hot plugin), which equal Go's rank.Score up to the
// rounding of the distance (0.1 m). Shops outside their delivery radius are
// on the pages, marked, below every shop that delivers; among shops that
// deliver alike no closed shop is above an open one; under open_now every
// shop is open and delivers.
func checkRelevanceWhileShopsCloseAndReopen(t *testing.T, s *Searcher, kinds []layout.Kind, states map[int64]*catalog.ShopState,
	write func(layout.Kind, map[int64]*catalog.ShopState)) {
	ctx := context.Background()
	rc := s.Config().Rank
	requests := relevanceRequests()
	rng := rand.New(rand.NewPCG(7, 7))
	ids := slices.Sorted(func(yield func(int64) bool) {
		for id := range states {
			if !yield(id) {
				return
			}
		}
	})
	const rounds = 5
	closedSeen, outsideSeen, openOutsideSeen := 0, 0, 0
	for round := range rounds {
		// Change the hot fields of one shop in ten, and write them while
		// searches run on every layout.
		changed := map[int64]*catalog.ShopState{}
		for _, id := range ids {
			st := states[id]
			if st.Deleted || rng.IntN(10) != 0 {
				continue
			}
			st.Version++
			st.Shop.Open = !st.Shop.Open
			st.Shop.DeliveryMinutes = 15 + rng.IntN(56)
			st.Shop.Rating = 3 + float64(rng.IntN(21))/10
			st.Shop.ReviewCount = rng.IntN(500)
			changed[id] = st
		}
		var searching sync.WaitGroup
		var searched atomic.Int64
		stop := make(chan struct{})
		searching.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := requests[i%len(requests)]
				for _, k := range kinds {
					if _, err := s.Search(ctx, req, k); err != nil {
						t.Errorf("round %d: %s during the writes, %s: %v", round, k, req.Encode().Encode(), err)
						return
					}
				}
				searched.Add(1)
			}
		})
		for _, k := range kinds {
			write(k, changed)
		}
		close(stop)
		searching.Wait()
		if searched.Load() == 0 {
			t.Errorf("round %d: no search ran during the writes", round)
		}

		for _, req := range requests {
			nested, _, diff := searchBoth(t, s, req)
			if diff != "" {
				t.Fatalf("round %d, %s: %s", round, req.Encode().Encode(), diff)
			}
			totals := rankTotals(t, s, req, kinds)
			for _, k := range kinds[1:] {
				if !slices.Equal(totals[k], totals[layout.Nested]) {
					t.Fatalf("round %d, %s: %s sorted by totals %v, nested by %v", round, req.Encode().Encode(), k, totals[k], totals[layout.Nested])
				}
			}
			at := req.Encode().Encode()
			sawClosed, sawOutside := false, false
			for i, sh := range nested.Shops {
				delivers := checkDeliversMark(t, sh, req, states[sh.ID])
				switch {
				case req.OpenNow && (!sh.Open || !delivers):
					t.Errorf("round %d, %s: shop %d (open %v, delivers %v) under open_now", round, at, sh.ID, sh.Open, delivers)
				case !delivers:
					if !sawOutside {
						sawClosed = false // a new tier
					}
					sawOutside = true
					outsideSeen++
					if sh.Open {
						openOutsideSeen++
					}
				case sawOutside:
					t.Errorf("round %d, %s: shop %d at %d delivers but is below one that does not", round, at, sh.ID, i)
				}
				if !sh.Open {
					sawClosed = true
					closedSeen++
				} else if sawClosed {
					t.Errorf("round %d, %s: open shop %d at %d is below a closed one that delivers alike", round, at, sh.ID, i)
				}
				goTotal := rc.Score(signalsOf(sh, req)).Total
				if sh.Rank == nil || math.Abs(goTotal-sh.Rank.Total) > 1e-3 {
					t.Errorf("round %d, shop %d: Go's total %v, the layout sorted by %+v", round, sh.ID, goTotal, sh.Rank)
				}
			}
		}
	}
	if closedSeen == 0 || outsideSeen == 0 || openOutsideSeen == 0 {
		t.Errorf("%d closed shops, %d outside their radius (%d of them open) on the pages: the test does not show where each goes",
			closedSeen, outsideSeen, openOutsideSeen)
	}
}

// checkDeliversMark returns a hit's delivers mark, checked: present exactly
// when the search has a location, and equal to the shop's own radius test
// (catalog data, Go's distance) except within a metre of the radius, where
// the index's rounded coordinates may decide otherwise.
func checkDeliversMark(t *testing.T, sh ShopHit, req query.Request, st *catalog.ShopState) bool {
	t.Helper()
	if !req.HasLocation() {
		if sh.Delivers != nil {
			t.Errorf("%s: shop %d marked delivers=%v without a location", req.Encode().Encode(), sh.ID, *sh.Delivers)
		}
		return true
	}
	if sh.Delivers == nil {
		t.Fatalf("%s: shop %d without a delivers mark", req.Encode().Encode(), sh.ID)
	}
	d := haversineMeters(*req.Lat, *req.Lon, st.Shop.Location.Lat, st.Shop.Location.Lon)
	if radius := st.Shop.DeliveryRadiusKm * 1000; math.Abs(d-radius) > 1 && *sh.Delivers != (d <= radius) {
		t.Errorf("%s: shop %d at %.1f m with a %.0f m radius marked delivers=%v", req.Encode().Encode(), sh.ID, d, radius, *sh.Delivers)
	}
	return *sh.Delivers
}

// relevanceRequests are relevance searches with text and a location, some
// with filters, most without open_now (closed shops stay visible).
func relevanceRequests() []query.Request {
	var out []query.Request
	for i, q := range []string{"치킨", "피자", "떡볶이", "짜장면", "불고기 피자", "burger", "비비큐", "커피", "양념치킨", "족발"} {
		p := seoulPoints[i%len(seoulPoints)]
		lat, lon := p[0], p[1]
		r := query.Request{Q: q, Lat: &lat, Lon: &lon, Sort: query.SortRelevance, Page: 1, Size: 50, Explain: true}
		if i%3 == 0 {
			r.MaxDeliveryFee = ptr(3000)
		}
		out = append(out, r)
		if i%2 == 0 {
			// While the table changes under it: a hot search whose shop
			// closed between its query and fetch phases once failed.
			openNow := r
			openNow.OpenNow = true
			out = append(out, openNow)
		}
		noLocation := r
		noLocation.Lat, noLocation.Lon = nil, nil
		out = append(out, noLocation)
	}
	return append(out, query.Request{Sort: query.SortRelevance, Page: 1, Size: 50, Explain: true})
}

// rankTotals are the totals each layout sorted a request's page by.
func rankTotals(t *testing.T, s *Searcher, req query.Request, kinds []layout.Kind) map[layout.Kind][]float64 {
	t.Helper()
	out := map[layout.Kind][]float64{}
	for _, k := range kinds {
		resp, err := s.Search(context.Background(), req, k)
		if err != nil {
			t.Fatalf("%s %s: %v", k, req.Encode().Encode(), err)
		}
		for _, sh := range resp.Shops {
			if sh.Rank == nil {
				t.Fatalf("%s %s: shop %d without rank contributions under explain", k, req.Encode().Encode(), sh.ID)
			}
			out[k] = append(out[k], sh.Rank.Total)
		}
	}
	return out
}

func signalsOf(sh ShopHit, r query.Request) rank.Signals {
	s := rank.Signals{HasText: r.Q != "", Open: sh.Open, HasLocation: r.HasLocation(), Delivers: sh.Delivers != nil && *sh.Delivers,
		DeliveryMinutes: sh.DeliveryMinutes, Rating: sh.Rating, ReviewCount: sh.ReviewCount}
	if sh.Rank != nil {
		s.Text = sh.Rank.TextScore
	}
	if sh.DistanceM != nil {
		s.DistanceM = *sh.DistanceM
	}
	return s
}

// checkSynonymsAndNameMatches: an English word finds what its Korean form
// finds, on every layout and only with synonyms on; a brand written either
// way puts that brand's open branches first.
func checkSynonymsAndNameMatches(t *testing.T, s *Searcher, kinds []layout.Kind, states map[int64]*catalog.ShopState) {
	ctx := context.Background()
	cfg := s.Config()
	cfg.Rank.Synonyms = false
	plain := s.WithConfig(cfg)
	ids := func(srch *Searcher, q string, k layout.Kind) []int64 {
		t.Helper()
		resp, err := srch.Search(ctx, query.Request{Q: q, Sort: query.SortRelevance, Page: 1, Size: 100}, k)
		if err != nil {
			t.Fatalf("%s %q: %v", k, q, err)
		}
		var out []int64
		for _, sh := range resp.Shops {
			out = append(out, sh.ID)
		}
		slices.Sort(out)
		return out
	}
	openBBQ := 0
	for _, st := range states {
		if !st.Deleted && st.Shop.Open && strings.Contains(st.Shop.Name, "BBQ") {
			openBBQ++
		}
	}
	if openBBQ < 3 {
		t.Fatalf("%d open BBQ shops in the catalog: the brand check has nothing to check", openBBQ)
	}
	for _, k := range kinds {
		korean := ids(s, "버거", k)
		if len(korean) == 0 {
			t.Fatalf("%s: 버거 finds nothing: the premise is wrong", k)
		}
		if english := ids(s, "burger", k); !slices.Equal(english, korean) {
			t.Errorf("%s: burger finds %d shops, 버거 %d; want the same", k, len(english), len(korean))
		}
		if without := ids(plain, "burger", k); len(without) != 0 {
			t.Errorf("%s: without synonyms burger finds %d shops, want none", k, len(without))
		}
		for _, q := range []string{"비비큐", "BBQ", "비비큐치킨"} {
			resp, err := s.Search(ctx, query.Request{Q: q, Sort: query.SortRelevance, Page: 1, Size: 10}, k)
			if err != nil {
				t.Fatal(err)
			}
			for i, sh := range resp.Shops[:min(len(resp.Shops), openBBQ, 10)] {
				if !strings.Contains(sh.Name, "BBQ") || !sh.Open {
					t.Errorf("%s %q: result %d is %q (open %v), want an open BBQ branch in the first %d", k, q, i, sh.Name, sh.Open, min(openBBQ, 10))
				}
			}
		}
	}
}
