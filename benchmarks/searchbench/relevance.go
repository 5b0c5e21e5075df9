package searchbench

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher"
	"github.com/baedal/baedal/searcher/rank"
)

// The offline relevance check: the judged set's queries, on the catalog as
// generated (before any update), ranked by the `relevance` formula and by
// the order it replaced (rank.TextThenRating), each top 10 scored with
// NDCG@10 against the grades of judge.go and searched for absurd pairs.

//go:embed relevance_queries.json
var judgedSetJSON []byte

// judgedQuery is one query of the judged set, at a named location.
type judgedQuery struct {
	Q    string `json:"q"`
	Kind string `json:"kind"`
	At   string `json:"at"`
}

type judgedSet struct {
	Locations map[string]struct {
		Lat float64 `json:"lat"`
		Lon float64 `json:"lon"`
	} `json:"locations"`
	Queries []judgedQuery `json:"queries"`
}

// loadJudgedSet parses the embedded judged set and checks that every query
// names a known location and would be accepted by the API.
func loadJudgedSet() (judgedSet, error) {
	var set judgedSet
	if err := json.Unmarshal(judgedSetJSON, &set); err != nil {
		return set, fmt.Errorf("searchbench: relevance_queries.json: %w", err)
	}
	for i, q := range set.Queries {
		if _, ok := set.Locations[q.At]; !ok {
			return set, fmt.Errorf("searchbench: relevance_queries.json: query %d (%q) is at unknown location %q", i, q.Q, q.At)
		}
		if _, err := query.ParseRequest(set.request(q).Encode()); err != nil {
			return set, fmt.Errorf("searchbench: relevance_queries.json: query %d (%q): %w", i, q.Q, err)
		}
	}
	return set, nil
}

// request is the search of judged query q: its text at its location, the
// first 10 shops in relevance order, with explain for the text scores.
func (set judgedSet) request(q judgedQuery) query.Request {
	at := set.Locations[q.At]
	lat, lon := at.Lat, at.Lon
	return query.Request{Q: q.Q, Lat: &lat, Lon: &lon, Sort: query.SortRelevance, Page: 1, Size: relevanceDepth, Explain: true}
}

// relevanceTimeout is the deadline of one search of the relevance check.
const relevanceTimeout = 30 * time.Second

// relevanceDepth is the cut of NDCG and of the absurd pairs: a first page
// on a phone.
const relevanceDepth = 10

// RelevanceTarget: NDCG@10 of `relevance` at least 1.2 times the order it
// replaced, and no absurd pair in any top 10.
var (
	RelevanceNDCGRatioTarget = bench.AtLeast(1.2)
	RelevanceAbsurdTarget    = bench.AtMost(0)
)

// RankingFigures are one ranking's figures over the judged set on one
// layout.
type RankingFigures struct {
	NDCG10 float64 `json:"ndcg10"`
	// NDCG10ByKind is the mean over each kind of query (dish, phrase,
	// brand, english).
	NDCG10ByKind map[string]float64 `json:"ndcg10_by_kind"`
	AbsurdTop10  int                `json:"absurd_top10"`
	Absurd       AbsurdCounts       `json:"absurd"`
	// OutOfRadiusTop10 is the number of top-10 shops outside their
	// delivery radius (graded 0), over every query.
	OutOfRadiusTop10 int `json:"out_of_radius_top10"`
}

// RelevanceFigures are the relevance check's figures.
type RelevanceFigures struct {
	Queries int `json:"queries"`
	// Judged is the number of queries with at least one shop graded above
	// 0; NDCG is their mean (a query without one has no ideal order).
	Judged int `json:"judged"`
	// Layout is the layout the figures below come from (hot when it ran);
	// Equal says every other layout returned the same top 10s.
	Layout string `json:"layout"`
	Equal  bool   `json:"equal"`
	// Relevance is the `relevance` formula (rank.Defaults), TextThenRating
	// the order it replaced.
	Relevance      RankingFigures `json:"relevance"`
	TextThenRating RankingFigures `json:"text_then_rating"`
	NDCG10Ratio    float64        `json:"ndcg10_ratio"`
}

// relevance runs the relevance check on every layout of the run; the
// catalog must be as generated (no update applied yet).
func (r *run) relevance(ctx context.Context) (RelevanceFigures, error) {
	set, err := loadJudgedSet()
	if err != nil {
		return RelevanceFigures{}, err
	}
	judged := r.judge(set)
	// The check is about order, not latency: its searches get a generous
	// deadline (the first ones after the load also warm the caches up).
	cfg := r.srch.Config()
	cfg.Timeout = relevanceTimeout
	before := cfg
	before.Rank = rank.TextThenRating()
	searchers := []*searcher.Searcher{r.srch.WithConfig(cfg), r.srch.WithConfig(before)}
	out := RelevanceFigures{Queries: len(set.Queries), Layout: string(r.kinds[len(r.kinds)-1]), Equal: true}
	for _, g := range judged {
		if len(g) > 0 {
			out.Judged++
		}
	}
	prog := bench.NewProgress(r.progress, "relevance check", int64(len(set.Queries)*len(r.kinds)*len(searchers)))
	defer prog.Done()
	for ri, s := range searchers {
		var figures RankingFigures
		var first [][]int64
		for i, k := range slices.Backward(r.kinds) {
			f, tops, err := r.rankingFigures(ctx, s, k, set, judged, prog)
			if err != nil {
				return out, err
			}
			if i == len(r.kinds)-1 { // the first layout of the backward walk: out.Layout
				figures, first = f, tops
			} else if !slices.EqualFunc(tops, first, slices.Equal) {
				out.Equal = false
			}
		}
		if ri == 0 {
			out.Relevance = figures
		} else {
			out.TextThenRating = figures
		}
	}
	out.NDCG10Ratio = bench.Ratio(out.Relevance.NDCG10, out.TextThenRating.NDCG10)
	return out, nil
}

// rankingFigures searches every judged query on layout k and scores the
// top 10s; it also returns the top 10s' shop ids, query by query.
func (r *run) rankingFigures(ctx context.Context, s *searcher.Searcher, k layout.Kind, set judgedSet, judged []map[int64]int, prog *bench.Progress) (RankingFigures, [][]int64, error) {
	f := RankingFigures{NDCG10ByKind: map[string]float64{}}
	perKind := map[string]int{}
	var tops [][]int64
	sum, n := 0.0, 0
	for i, q := range set.Queries {
		resp, err := s.Search(ctx, set.request(q), k)
		prog.Add(1)
		if err != nil {
			return f, nil, fmt.Errorf("searchbench: relevance query %q at %s on %s: %w", q.Q, q.At, k, err)
		}
		ids := make([]int64, len(resp.Shops))
		grades := make([]int, len(resp.Shops))
		pairs := make([]absurdPair, len(resp.Shops))
		for j, sh := range resp.Shops {
			ids[j], grades[j] = sh.ID, judged[i][sh.ID]
			pairs[j] = absurdPair{Open: sh.Open, Delivers: sh.Delivers != nil && *sh.Delivers,
				DeliveryMinutes: sh.DeliveryMinutes, Rating: sh.Rating, ReviewCount: sh.ReviewCount}
			if !pairs[j].Delivers {
				f.OutOfRadiusTop10++
			}
			if sh.DistanceM != nil {
				pairs[j].DistanceM = *sh.DistanceM
			}
			if sh.Rank != nil {
				pairs[j].TextScore = sh.Rank.TextScore
			}
		}
		tops = append(tops, ids)
		f.Absurd.add(absurdPairs(pairs))
		if len(judged[i]) == 0 {
			continue
		}
		score := ndcgAt(relevanceDepth, grades, slices.Collect(maps.Values(judged[i])))
		sum, n = sum+score, n+1
		f.NDCG10ByKind[q.Kind] += score
		perKind[q.Kind]++
	}
	for kind, c := range perKind {
		f.NDCG10ByKind[kind] = round3(f.NDCG10ByKind[kind] / float64(c))
	}
	if n > 0 {
		f.NDCG10 = round3(sum / float64(n))
	}
	f.AbsurdTop10 = f.Absurd.Total()
	return f, tops, nil
}

// judge grades every generated shop for every judged query: one map per
// query, shop id → grade, of the grades above 0.
func (r *run) judge(set judgedSet) []map[int64]int {
	out := make([]map[int64]int, len(set.Queries))
	words := make([][]string, len(set.Queries))
	for i, q := range set.Queries {
		out[i] = map[int64]int{}
		words[i] = strings.Fields(q.Q)
	}
	gen := catalog.NewGenerator(uint64(r.cfg.Bench.Seed))
	for _, s := range gen.Shops(r.cfg.Shops) {
		for i, q := range set.Queries {
			at := set.Locations[q.At]
			if g := judgeShop(&s, words[i], at.Lat, at.Lon); g > 0 {
				out[i][s.Shop.ID] = g
			}
		}
	}
	return out
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// judgeRelevance adds the relevance check's targets. Both figures are
// exact over the judged set (no sampling noise), so each interval is its
// point; a layout that disagreed with the others misses both.
func judgeRelevance(t bench.Targets, f RelevanceFigures) {
	ratio := RelevanceNDCGRatioTarget.Evaluate(f.NDCG10Ratio, bench.Exact(f.NDCG10Ratio))
	absurd := RelevanceAbsurdTarget.Evaluate(float64(f.Relevance.AbsurdTop10), bench.Exact(float64(f.Relevance.AbsurdTop10)))
	if !f.Equal {
		ratio.Verdict, absurd.Verdict = bench.VerdictMissed, bench.VerdictMissed
	}
	t["ndcg10_ratio"], t["absurd_top10"] = ratio, absurd
}

// relevanceSection is the report's table of the relevance check.
func relevanceSection(f RelevanceFigures) bench.Section {
	tbl := &bench.Table{Header: []string{"ranking", "NDCG@10", "dish", "phrase", "brand", "english",
		"absurd pairs (closed above open, out of radius above deliverable, far above near, low-review 5.0 above many)", "out-of-radius shops in top 10s"}}
	for _, row := range []struct {
		name string
		f    RankingFigures
	}{{"relevance (rank.Defaults)", f.Relevance}, {"text, then rating (before)", f.TextThenRating}} {
		k := row.f.NDCG10ByKind
		tbl.Rows = append(tbl.Rows, []string{row.name, fmt.Sprintf("%.3f", row.f.NDCG10),
			fmt.Sprintf("%.3f", k["dish"]), fmt.Sprintf("%.3f", k["phrase"]), fmt.Sprintf("%.3f", k["brand"]), fmt.Sprintf("%.3f", k["english"]),
			fmt.Sprintf("%d (%d, %d, %d, %d)", row.f.AbsurdTop10, row.f.Absurd.ClosedAboveOpen, row.f.Absurd.OutOfRadiusAboveDeliverable,
				row.f.Absurd.FarAboveNear, row.f.Absurd.LowReviewFiveAboveMany),
			fmt.Sprint(row.f.OutOfRadiusTop10)})
	}
	return bench.Section{Title: "Offline relevance check", Table: tbl, Text: fmt.Sprintf(
		"%d judged queries (%d with a relevant shop) at Seoul locations on the catalog as generated, top %d of each, on the %s layout (every layout returned the same top 10s: %v). "+
			"Grades by the rules of judge.go (docs/search.md). NDCG@10 ratio %.2f (target at least %.1f); absurd pairs of relevance: %d (target 0).",
		f.Queries, f.Judged, relevanceDepth, f.Layout, f.Equal, f.NDCG10Ratio, RelevanceNDCGRatioTarget.Value, f.Relevance.AbsurdTop10)}
}
