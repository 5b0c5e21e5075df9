package searcher

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher/rank"
)

// sortClauses returns the sort of the decision phase. carried holds the split
// layout's carried values; hotTable names the hot layout's table; with
// neither (the nested layout) every key is read from the documents. rc is
// the relevance formula.
func sortClauses(r *query.Request, rc rank.Config, carried *candidates, hotTable string) arr {
	hotField := func(field, order string) obj {
		if hotTable != "" {
			return hotSort(hotTable, field, order, nil)
		}
		return obj{field: obj{"order": order}}
	}
	switch r.Sort {
	case query.SortDistance:
		return arr{obj{"_geo_distance": obj{"location": obj{"lat": *r.Lat, "lon": *r.Lon}, "order": "asc", "unit": "m", "distance_type": "arc"}}, idAsc()}
	case query.SortDeliveryMinutes:
		return arr{hotField("delivery_minutes", "asc"), idAsc()}
	case query.SortRating:
		return arr{hotField("rating", "desc"), idAsc()}
	case query.SortDeliveryFee:
		return arr{hotField("delivery_fee", "asc"), idAsc()}
	case query.SortETA:
		matched := obj{"path": "menus", "filter": menuPredicate(r, rc, false, nil)}
		switch {
		case hotTable != "":
			return arr{hotSort(hotTable, "eta", "asc", matched), idAsc()}
		case carried == nil:
			return arr{obj{"menus.eta": obj{"order": "asc", "mode": "min", "nested": matched}}, idAsc()}
		}
		return arr{scriptSort("asc", "doc['delivery_minutes'].value + params.c[String.valueOf(doc['id'].value)]", obj{"c": carried.minCook}), idAsc()}
	}
	// Relevance: the formula of package rank, then id. Its text score is
	// the query's _score (nested), the score carried from the menu query
	// (split), or the query's score read by the plugin (hot).
	params := rc.Params(r.Q != "", r.Lat, r.Lon)
	switch {
	case hotTable != "":
		return append(arr{hotRankSort(hotTable, params), idAsc()}, textScoreLast(r)...)
	case carried == nil:
		return append(arr{scriptSort("desc", rank.SortScript("_score"), params), idAsc()}, textScoreLast(r)...)
	}
	if r.Q != "" {
		params["s"] = carried.score
	}
	return arr{scriptSort("desc", rank.SortScript("params.s[String.valueOf(doc['id'].value)]"), params), idAsc()}
}

// textScoreLast is the last sort key of a one-request layout's (nested,
// hot) relevance sort with text: _score, after the unique id, so it never
// changes the order. It makes the query phase compute the text score that
// the relevance sort reads (a sort without a score key gets constant
// scores), and returns it as the hit's third sort value, for explain.
// track_scores would do the first, but then the fetch phase scores each hit
// again, and on the hot layout a hit whose table row changed in between no
// longer matches: the search failed with "Can't compute score on document".
func textScoreLast(r *query.Request) arr {
	if r.Q == "" {
		return nil
	}
	return arr{obj{"_score": obj{"order": "desc"}}}
}

func scriptSort(order, source string, params obj) obj {
	return obj{"_script": obj{"type": "number", "order": order, "script": obj{"source": source, "params": params}}}
}

// nested runs the baseline: one request does query, decision and fetch.
func (e *execution) nested(ctx context.Context) (*Response, error) {
	r := e.req
	filter := append(coldShopFilters(r, scriptDeliveryArea), hotShopFilters(r)...)
	if r.MaxTotalFee != nil {
		filter = append(filter, nestedMenus(menuPredicate(r, e.s.cfg.Rank, false, r.MaxTotalFee), nil))
	}
	body := obj{
		"query":            oneRequestQuery(r, e.s.cfg.Rank, filter),
		"sort":             sortClauses(r, e.s.cfg.Rank, nil, ""),
		"from":             r.From(),
		"size":             r.Size,
		"track_total_hits": true,
		"_source":          obj{"excludes": arr{"menus"}},
	}
	addDeliversField(body, r)
	return e.oneRequest(ctx, e.s.idx.Alias(layout.RoleNested), body)
}

// oneRequestQuery is the query of the layouts that answer in one request
// (nested, hot): the shop filters and, when the request needs menu fields,
// a matched menu, whose inner hits are the page's matched menus.
func oneRequestQuery(r *query.Request, rc rank.Config, filter arr) obj {
	b := obj{}
	matched := nestedMenus(menuPredicate(r, rc, r.Q != "", nil), matchedMenusInnerHits(r.Q, rc))
	switch {
	case r.Q != "":
		b["must"] = arr{matched}
	case query.NeedsMenuQuery(r):
		// Price range, max_total_fee or eta: a matched menu is required,
		// exactly as the split layout's menu query requires one.
		filter = append(filter, matched)
	default:
		// Only to return menus for display: a shop without menus matches.
		// A bool of should clauses alone requires one of them, whatever
		// minimum_should_match says, so the filter list must not be empty.
		b["should"] = arr{matched}
		if len(filter) == 0 {
			filter = arr{obj{"match_all": obj{}}}
		}
	}
	if len(filter) > 0 {
		b["filter"] = filter
	}
	return obj{"bool": b}
}

// oneRequest sends the one request of a nested or hot search to index and
// reads the page.
func (e *execution) oneRequest(ctx context.Context, index string, body obj) (*Response, error) {
	step := StepStats{Name: e.plan.Steps[0].Name(), Index: index}
	path := "/" + index + "/_search"
	if e.kind == layout.Hot {
		// A node whose baedal-hot table does not serve (recovering,
		// rebuilding) fails its shards with 503, and OpenSearch tries
		// another copy; if none serves, this makes the search fail rather
		// than answer a partial page.
		path += "?allow_partial_search_results=false"
	}
	out, err := e.search(ctx, &step, path, body)
	if err != nil {
		return nil, err
	}
	step.Candidates = out.Hits.Total.Value
	e.finishStep(step)
	resp := &Response{Total: out.Hits.Total.Value, Shops: make([]ShopHit, 0, len(out.Hits.Hits))}
	for _, h := range out.Hits.Hits {
		sh, err := shopHit(h, e.req)
		if err != nil {
			return nil, err
		}
		if e.kind == layout.Hot {
			if err := overlayHotFields(&sh, h); err != nil {
				return nil, err
			}
		}
		explainRank(&sh, h, textScoreOf(h), e.s.cfg.Rank, e.req)
		sh.MatchedMenus = matchedMenus(h)
		resp.Shops = append(resp.Shops, sh)
	}
	return resp, nil
}

// addDeliversField asks a page's search for the delivers mark
// (deliversField) when the request has a location.
func addDeliversField(body obj, r *query.Request) {
	if f := deliversField(r); f != nil {
		body["script_fields"] = f
	}
}

// shopHit decodes a shop document, its delivers mark (deliversField) and,
// for the eta sort, its sort value.
func shopHit(h hit, r *query.Request) (ShopHit, error) {
	var sh ShopHit
	if err := json.Unmarshal(h.Source, &sh); err != nil {
		return sh, fmt.Errorf("searcher: decode shop %s: %w", h.ID, err)
	}
	if r.HasLocation() {
		marks := h.Fields[deliversFieldName]
		var delivers bool
		if len(marks) != 1 || json.Unmarshal(marks[0], &delivers) != nil {
			return sh, fmt.Errorf("searcher: shop %s came back without its %s mark (%d values)", h.ID, deliversFieldName, len(marks))
		}
		sh.Delivers = &delivers
	}
	if r.Sort == query.SortETA && len(h.Sort) > 0 {
		var v float64
		if json.Unmarshal(h.Sort[0], &v) == nil {
			eta := int(v)
			sh.ETAMinutes = &eta
		}
	}
	sh.MatchedMenus = []MatchedMenu{}
	return sh, nil
}

// explainRank adds, under explain=true and the relevance sort, each
// signal's points (package rank, evaluated in Go on the hit's fields) and
// the total the layout sorted by (the hit's first sort value). text is the
// shop's text score.
func explainRank(sh *ShopHit, h hit, text float64, rc rank.Config, r *query.Request) {
	if !r.Explain || r.Sort != query.SortRelevance {
		return
	}
	sig := rank.Signals{HasText: r.Q != "", Text: text, Open: sh.Open, HasLocation: r.HasLocation(),
		Delivers: sh.Delivers != nil && *sh.Delivers, DeliveryMinutes: sh.DeliveryMinutes, Rating: sh.Rating, ReviewCount: sh.ReviewCount}
	if r.HasLocation() {
		sig.DistanceM = haversineMeters(*r.Lat, *r.Lon, sh.Location.Lat, sh.Location.Lon)
	}
	c := rc.Score(sig)
	if len(h.Sort) > 0 {
		var total float64
		if json.Unmarshal(h.Sort[0], &total) == nil {
			c.Total = total
		}
	}
	sh.Rank = &c
}

// textScoreOf is a nested or hot hit's text score: its third sort value
// under a relevance sort with text (textScoreLast), else 0.
func textScoreOf(h hit) float64 {
	var score float64
	if len(h.Sort) == 3 {
		_ = json.Unmarshal(h.Sort[2], &score)
	}
	return score
}
