package searcher

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

// sortClauses returns the sort of the decision phase. carried holds the split
// layout's carried values (nil on the nested layout, which evaluates the same
// keys from its own documents).
func sortClauses(r *query.Request, carried *candidates) arr {
	switch r.Sort {
	case query.SortDistance:
		return arr{obj{"_geo_distance": obj{"location": obj{"lat": *r.Lat, "lon": *r.Lon}, "order": "asc", "unit": "m", "distance_type": "arc"}}, idAsc()}
	case query.SortDeliveryMinutes:
		return arr{obj{"delivery_minutes": obj{"order": "asc"}}, idAsc()}
	case query.SortRating:
		return arr{obj{"rating": obj{"order": "desc"}}, idAsc()}
	case query.SortDeliveryFee:
		return arr{obj{"delivery_fee": obj{"order": "asc"}}, idAsc()}
	case query.SortETA:
		if carried == nil {
			return arr{obj{"menus.eta": obj{"order": "asc", "mode": "min",
				"nested": obj{"path": "menus", "filter": menuPredicate(r, false, nil)}}}, idAsc()}
		}
		return arr{scriptSort("asc", "doc['delivery_minutes'].value + params.c[String.valueOf(doc['id'].value)]", obj{"c": carried.minCook}), idAsc()}
	}
	// Relevance: text score when there is text, then rating, then id.
	rel := arr{obj{"rating": obj{"order": "desc"}}, idAsc()}
	if r.Q == "" {
		return rel
	}
	if carried == nil {
		return append(arr{obj{"_score": obj{"order": "desc"}}}, rel...)
	}
	return append(arr{scriptSort("desc", "params.s[String.valueOf(doc['id'].value)]", obj{"s": carried.score})}, rel...)
}

func scriptSort(order, source string, params obj) obj {
	return obj{"_script": obj{"type": "number", "order": order, "script": obj{"source": source, "params": params}}}
}

// nested runs the baseline: one request does query, decision and fetch.
func (e *execution) nested(ctx context.Context) (*Response, error) {
	r := e.req
	filter := append(coldShopFilters(r), hotShopFilters(r)...)
	if r.MaxTotalFee != nil {
		filter = append(filter, nestedMenus(menuPredicate(r, false, r.MaxTotalFee), nil))
	}
	b := obj{}
	matched := nestedMenus(menuPredicate(r, r.Q != "", nil), matchedMenusInnerHits(r.Q))
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
	body := obj{
		"query":            obj{"bool": b},
		"sort":             sortClauses(r, nil),
		"from":             r.From(),
		"size":             r.Size,
		"track_total_hits": true,
		"_source":          obj{"excludes": arr{"menus"}},
	}
	step := StepStats{Name: e.plan.Steps[0].Name(), Index: e.s.idx.Alias(layout.RoleNested)}
	out, err := e.search(ctx, &step, "/"+step.Index+"/_search", body)
	if err != nil {
		return nil, err
	}
	step.Candidates = out.Hits.Total.Value
	e.finishStep(step)
	resp := &Response{Total: out.Hits.Total.Value, Shops: make([]ShopHit, 0, len(out.Hits.Hits))}
	for _, h := range out.Hits.Hits {
		sh, err := shopHit(h, r)
		if err != nil {
			return nil, err
		}
		sh.MatchedMenus = matchedMenus(h)
		resp.Shops = append(resp.Shops, sh)
	}
	return resp, nil
}

// shopHit decodes a shop document and, for the eta sort, its sort value.
func shopHit(h hit, r *query.Request) (ShopHit, error) {
	var sh ShopHit
	if err := json.Unmarshal(h.Source, &sh); err != nil {
		return sh, fmt.Errorf("searcher: decode shop %s: %w", h.ID, err)
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
