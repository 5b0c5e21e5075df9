package searchbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/query"
)

// PathologicalTarget: on every layout, the p99 of legal but costly
// searches at most 3x the p99 of the ordinary mix.
var PathologicalTarget = bench.AtMost(3)

// PathologicalFigures compare legal but costly searches (long, repetitive,
// many-word, deep page, a fee bound over the whole catalog) with the
// ordinary query mix, on each layout, idle. Both kinds run in one
// interleaved phase: each search runs on every layout in alternating
// order, and the kinds are shuffled together.
type PathologicalFigures struct {
	Ordinary     int `json:"ordinary"`
	Pathological int `json:"pathological"`
	// Layouts holds each layout's figures, by layout name.
	Layouts map[string]PathologicalLayout `json:"layouts"`
	// ByQuery holds, for each of PathologicalQueries in order, its p99 and
	// missed searches on each layout: which costly search is the costly one.
	ByQuery []PathologicalQuery `json:"by_query"`
}

// PathologicalQuery is one costly search's figures, by layout name.
type PathologicalQuery struct {
	Query  string             `json:"query"`
	P99Ms  map[string]float64 `json:"p99_ms"`
	Missed map[string]int     `json:"missed"`
}

// PathologicalLayout is one layout's figures: p99 of each kind, their
// ratio (pathological over ordinary) with its 95% interval, and the
// searches of each kind that got no answer (they count at the time they
// took, the deadline or the rejection).
type PathologicalLayout struct {
	OrdinaryP99Ms     float64        `json:"ordinary_p99_ms"`
	PathologicalP99Ms float64        `json:"pathological_p99_ms"`
	P99Ratio          float64        `json:"p99_ratio"`
	P99RatioCI95      bench.Interval `json:"p99_ratio_ci95"`
	// The mix is cut into rounds like the other phases; the interval
	// covers their spread too.
	P99RatioRounds     bench.RoundRatios `json:"p99_ratio_rounds"`
	MissedOrdinary     int               `json:"missed_ordinary"`
	MissedPathological int               `json:"missed_pathological"`
}

// PathologicalQueries are the costly searches, as a client sends them:
// each is parsed as GET /v1/search parses it, so the server's caps and
// normalization apply.
var PathologicalQueries = []string{
	// One word 33 times, 100 characters: once 4-9 s on every layout.
	"q=" + url.QueryEscape(strings.Repeat("치킨 ", 33)+"치"),
	// The most different words allowed, each common.
	"q=" + url.QueryEscape("치킨 피자 떡볶이 짜장면 족발 보쌈 김밥 메뉴") + "&lat=37.4979&lon=127.0276",
	// One 100-character word: many n-grams.
	"q=" + url.QueryEscape(strings.Repeat("양념반후라이드반", 12)+"순살치"),
	// The deepest page of a text that matches nearly every shop.
	"q=" + url.QueryEscape("메뉴") + "&page=500&size=20",
	// A total-fee bound and ETA over the whole catalog (split carries a
	// value per shop).
	"max_total_fee=4000&sort=eta&lat=37.4979&lon=127.0276",
}

// pathological runs the pathological phase: ordinary searches are the
// first of queries, and there are half as many pathological ones, cycling
// through PathologicalQueries.
func (r *run) pathological(ctx context.Context, ordinary []query.Request, rounds int) (PathologicalFigures, error) {
	var costly []query.Request
	for _, raw := range PathologicalQueries {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return PathologicalFigures{}, err
		}
		req, err := query.ParseRequest(v)
		if err != nil {
			return PathologicalFigures{}, fmt.Errorf("searchbench: pathological query %s: %w", raw, err)
		}
		costly = append(costly, req)
	}
	type search struct {
		req    query.Request
		costly bool
		which  int // the index in PathologicalQueries of a costly search
	}
	var mix []search
	for _, q := range ordinary {
		mix = append(mix, search{req: q})
	}
	for i := range max(len(costly), len(ordinary)/2) {
		mix = append(mix, search{req: costly[i%len(costly)], costly: true, which: i % len(costly)})
	}
	rand.New(rand.NewPCG(uint64(r.cfg.Bench.Seed), 7)).Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })

	rounds = min(rounds, len(mix))
	recs := make([][2][]*bench.LatencyRecorder, len(r.kinds)) // [ordinary, costly][round]
	miss := make([][2]int, len(r.kinds))
	byQuery := make([][]*bench.LatencyRecorder, len(costly)) // [query][layout slot]
	missedByQuery := make([][]int, len(costly))
	for i := range recs {
		recs[i] = [2][]*bench.LatencyRecorder{newRoundRecorders(1, rounds)[0], newRoundRecorders(1, rounds)[0]}
	}
	for q := range byQuery {
		missedByQuery[q] = make([]int, len(r.kinds))
		for range r.kinds {
			byQuery[q] = append(byQuery[q], bench.NewLatencyRecorder())
		}
	}
	prog := bench.NewProgress(r.progress, "search pathological", int64(len(mix)))
	defer prog.Done()
	var mu sync.Mutex // guards miss
	err := forEach(r.cfg.Clients, len(mix), func(i int) error {
		s := mix[i]
		kind := 0
		if s.costly {
			kind = 1
		}
		round := i * rounds / len(mix)
		for _, slot := range bench.RoundOrder(i, len(r.kinds)) {
			k := r.kinds[slot]
			start := time.Now()
			_, err := r.srch.Search(ctx, s.req, k)
			took := time.Since(start)
			// Only answered searches have a latency; missed ones are
			// counted below.
			if err == nil {
				recs[slot][kind][round].Record(took)
				if s.costly {
					byQuery[s.which][slot].Record(took)
				}
			}
			if err != nil {
				var m missed
				if !m.count(err) {
					return fmt.Errorf("searchbench: pathological phase, %s on %s: %w", s.req.Encode().Encode(), k, err)
				}
				mu.Lock()
				miss[slot][kind]++
				if s.costly {
					missedByQuery[s.which][slot]++
				}
				mu.Unlock()
			}
		}
		prog.Add(1)
		return nil
	})
	if err != nil {
		return PathologicalFigures{}, err
	}
	f := PathologicalFigures{Ordinary: len(ordinary), Pathological: len(mix) - len(ordinary), Layouts: map[string]PathologicalLayout{}}
	seed := uint64(r.cfg.Bench.Seed)
	for slot, k := range r.kinds {
		o, c := bench.Pool(recs[slot][0]).Summary(), bench.Pool(recs[slot][1]).Summary()
		ratio := bench.QuantileRatioOverRounds(recs[slot][0], recs[slot][1], 0.99, seed)
		f.Layouts[string(k)] = PathologicalLayout{
			OrdinaryP99Ms: o.P99Ms, PathologicalP99Ms: c.P99Ms,
			P99Ratio: ratio.Point, P99RatioCI95: ratio.CI95, P99RatioRounds: ratio.Rounds,
			MissedOrdinary: miss[slot][0], MissedPathological: miss[slot][1],
		}
	}
	for q, raw := range PathologicalQueries {
		pq := PathologicalQuery{Query: raw, P99Ms: map[string]float64{}, Missed: map[string]int{}}
		for slot, k := range r.kinds {
			pq.P99Ms[string(k)] = byQuery[q][slot].Summary().P99Ms
			pq.Missed[string(k)] = missedByQuery[q][slot]
		}
		f.ByQuery = append(f.ByQuery, pq)
	}
	return f, nil
}

// judgePathological adds one target per layout: pathological_p99_ratio_X.
// A layout that missed a pathological search (timeout or rejection) has
// its ratio from the time it gave up, a bound it would have exceeded: it
// is judged missed.
func judgePathological(t bench.Targets, f PathologicalFigures) {
	for k, l := range f.Layouts {
		res := PathologicalTarget.Evaluate(l.P99Ratio, l.P99RatioCI95)
		if l.MissedPathological > 0 {
			res.Verdict = bench.VerdictMissed
		}
		t["pathological_p99_ratio_"+k] = res
	}
}
