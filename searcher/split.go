package searcher

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

// candidates are the shops a query step let through, with carried values.
type candidates struct {
	ids      []int64
	score    map[string]float64
	minExtra map[string]int64
	minCook  map[string]int64
}

// split runs the planned steps on the split layout.
func (e *execution) split(ctx context.Context) (*Response, error) {
	var cands *candidates
	resp := &Response{Shops: []ShopHit{}}
	for _, step := range e.plan.Steps {
		switch {
		case step.Index == query.IndexMenus && step.Has(query.PhaseQuery):
			c, err := e.menuQuery(ctx, step, cands)
			if err != nil {
				return nil, err
			}
			cands = c
		case step.Index == query.IndexShops && !step.Has(query.PhaseDecision):
			c, err := e.shopCandidates(ctx, step)
			if err != nil {
				return nil, err
			}
			cands = c
		case step.Index == query.IndexShops:
			if err := e.shopDecision(ctx, step, cands, resp); err != nil {
				return nil, err
			}
		case step.Index == query.IndexMenus && step.Has(query.PhaseFetch):
			if err := e.menuFetch(ctx, step, resp); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("searcher: no executor for step %s", step.Name())
		}
		if cands != nil && len(cands.ids) == 0 {
			return resp, nil // nothing can match any more
		}
	}
	return resp, nil
}

// menuQuery collects every shop with a matched menu, and the carried values.
func (e *execution) menuQuery(ctx context.Context, step query.Step, restrict *candidates) (*candidates, error) {
	r := e.req
	scoring := slices.Contains(step.Carries, query.CarryScore)
	var filter arr
	if step.Restricted && restrict != nil {
		// The shop query already applied the cold filters to these ids.
		filter = arr{obj{"terms": obj{"id": restrict.ids}}}
	} else {
		filter = coldShopFilters(r, scriptDeliveryArea)
	}
	clause := nestedMenus(menuPredicate(r, e.s.cfg.Rank, scoring, nil), nil)
	b := obj{}
	if scoring {
		b["must"] = arr{clause}
	} else {
		filter = append(filter, clause)
	}
	b["filter"] = filter
	// The menu minimums come back as nested sort values, read from doc
	// values: no stored field or _source is touched. The id comes first: it
	// is unique, so it alone orders the pages, and a nested sort as the
	// primary key breaks search_after (Lucene's competitive-doc skipping calls
	// advance() on nested doc values, which OpenSearch 3.8 does not support).
	sorts := arr{idAsc()}
	minOf := func(field string) obj {
		return obj{field: obj{"order": "asc", "mode": "min", "nested": obj{"path": "menus", "filter": menuPredicate(r, e.s.cfg.Rank, false, nil)}}}
	}
	wantExtra, wantCook := slices.Contains(step.Carries, query.CarryMinExtraFee), slices.Contains(step.Carries, query.CarryMinCookMinutes)
	if wantExtra {
		sorts = append(sorts, minOf("menus.extra_fee"))
	}
	if wantCook {
		sorts = append(sorts, minOf("menus.cook_minutes"))
	}
	body := obj{"query": obj{"bool": b}, "sort": sorts, "stored_fields": "_none_", "track_total_hits": false}
	if scoring {
		body["track_scores"] = true
	}
	c := &candidates{}
	if scoring {
		c.score = map[string]float64{}
	}
	if wantExtra {
		c.minExtra = map[string]int64{}
	}
	if wantCook {
		c.minCook = map[string]int64{}
	}
	stats := StepStats{Name: step.Name(), Index: e.s.idx.Alias(layout.RoleMenus)}
	err := e.collect(ctx, &stats, body, func(h hit) error {
		vals, err := sortInts(h.Sort)
		if err != nil {
			return err
		}
		id := vals[0]
		key := idKey(id)
		c.ids = append(c.ids, id)
		i := 1
		if wantExtra {
			c.minExtra[key] = vals[i]
			i++
		}
		if wantCook {
			c.minCook[key] = vals[i]
		}
		if scoring {
			if h.Score == nil {
				return fmt.Errorf("searcher: step %s: shop %d came back without a score", stats.Name, id)
			}
			c.score[key] = *h.Score
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	stats.Candidates = len(c.ids)
	e.finishStep(stats)
	return c, nil
}

// shopCandidates is the shop-first plan's first step: shop predicates only.
func (e *execution) shopCandidates(ctx context.Context, step query.Step) (*candidates, error) {
	r := e.req
	filter := append(coldShopFilters(r, scriptDeliveryArea), hotShopFilters(r)...)
	body := obj{"query": obj{"bool": obj{"filter": filter}}, "sort": arr{idAsc()}, "stored_fields": "_none_", "track_total_hits": false}
	stats := StepStats{Name: step.Name(), Index: e.s.idx.Alias(layout.RoleShops)}
	c := &candidates{}
	err := e.collect(ctx, &stats, body, func(h hit) error {
		vals, err := sortInts(h.Sort)
		if err != nil {
			return err
		}
		c.ids = append(c.ids, vals[0])
		return nil
	})
	if err != nil {
		return nil, err
	}
	stats.Candidates = len(c.ids)
	e.finishStep(stats)
	return c, nil
}

// shopDecision sorts and pages the candidates on the shop index (which holds
// the hot fields) and fetches the page's shop fields.
func (e *execution) shopDecision(ctx context.Context, step query.Step, cands *candidates, resp *Response) error {
	r := e.req
	filter := hotShopFilters(r)
	if step.Restricted && cands != nil {
		filter = append(filter, obj{"terms": obj{"id": cands.ids}})
	} else {
		filter = append(filter, coldShopFilters(r, scriptDeliveryArea)...)
	}
	if r.MaxTotalFee != nil {
		filter = append(filter, totalFeeFilter(cands.minExtra, *r.MaxTotalFee))
	}
	carried := cands
	if carried == nil {
		carried = &candidates{} // a plan without a menu query sorts on shop fields only
	}
	body := obj{
		"query":            obj{"bool": obj{"filter": filter}},
		"sort":             sortClauses(r, e.s.cfg.Rank, carried, ""),
		"from":             r.From(),
		"size":             r.Size,
		"track_total_hits": true,
		"_source":          true,
	}
	addDeliversField(body, r)
	stats := StepStats{Name: step.Name(), Index: e.s.idx.Alias(layout.RoleShops)}
	out, err := e.search(ctx, &stats, "/"+stats.Index+"/_search", body)
	if err != nil {
		return err
	}
	stats.Candidates = out.Hits.Total.Value
	e.finishStep(stats)
	resp.Total = out.Hits.Total.Value
	for _, h := range out.Hits.Hits {
		sh, err := shopHit(h, r)
		if err != nil {
			return err
		}
		explainRank(&sh, h, carried.score[idKey(sh.ID)], e.s.cfg.Rank, r)
		resp.Shops = append(resp.Shops, sh)
	}
	return nil
}

// totalFeeFilter is max_total_fee on the shop index: the shop's delivery fee
// plus the smallest extra_fee of its matched menus, carried from the menu
// query, is at most max. A shop without a carried value fails it: Lucene may
// run the script before the terms filter that restricts the step to the
// carried shops (it orders two-phase checks by their estimated cost), so the
// script also sees shops that are not candidates. So may a document without
// fields: a conjunction's bulk scorer can ask the script about a delete
// tombstone (only _id and the soft-delete marker) before it checks that the
// document is live, and reading a value it lacks throws; the size checks
// make such a document fail the filter, which the live-docs check then
// drops anyway.
func totalFeeFilter(minExtra map[string]int64, max int) obj {
	return obj{"script": obj{"script": obj{
		"source": "if (doc['id'].size() == 0 || doc['delivery_fee'].size() == 0) { return false; } def e = params.e[String.valueOf(doc['id'].value)]; return e != null && doc['delivery_fee'].value + e <= params.max;",
		"params": obj{"e": minExtra, "max": max},
	}}}
}

// menuFetch reads the matched menus (with highlights) of the final page.
func (e *execution) menuFetch(ctx context.Context, step query.Step, resp *Response) error {
	if len(resp.Shops) == 0 {
		return nil
	}
	r := e.req
	ids := make([]int64, len(resp.Shops))
	for i, sh := range resp.Shops {
		ids[i] = sh.ID
	}
	matched := nestedMenus(menuPredicate(r, e.s.cfg.Rank, r.Q != "", nil), matchedMenusInnerHits(r.Q, e.s.cfg.Rank))
	b := obj{"filter": arr{obj{"terms": obj{"id": ids}}}}
	if r.Q != "" {
		b["must"] = arr{matched}
	} else {
		b["filter"] = append(b["filter"].(arr), matched)
	}
	body := obj{"query": obj{"bool": b}, "size": len(ids), "_source": false}
	stats := StepStats{Name: step.Name(), Index: e.s.idx.Alias(layout.RoleMenus)}
	out, err := e.search(ctx, &stats, "/"+stats.Index+"/_search", body)
	if err != nil {
		return err
	}
	stats.Candidates = len(out.Hits.Hits)
	e.finishStep(stats)
	byID := map[string][]MatchedMenu{}
	for _, h := range out.Hits.Hits {
		byID[h.ID] = matchedMenus(h)
	}
	for i := range resp.Shops {
		if m, ok := byID[idKey(resp.Shops[i].ID)]; ok {
			resp.Shops[i].MatchedMenus = m
		}
	}
	return nil
}

// collect reads every hit of a query step. The first page is a plain search;
// if it is full, the rest is read from a point in time with search_after, so
// more than 10,000 candidates are never truncated. Steps ask for
// stored_fields _none_ (no _id is read from stored fields, the costly part of
// returning thousands of hits) and sort on id first, so the first sort value
// is the shop id; it also removes the duplicates the switch to a point in
// time can cause.
func (e *execution) collect(ctx context.Context, stats *StepStats, body obj, onHit func(hit) error) error {
	page := e.s.cfg.CandidatePage
	body["size"] = page
	out, err := e.search(ctx, stats, "/"+stats.Index+"/_search", body)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	emit := func(hits []hit) error {
		for _, h := range hits {
			if len(h.Sort) == 0 {
				return fmt.Errorf("searcher: step %s: a hit without sort values", stats.Name)
			}
			id := string(h.Sort[0])
			if seen[id] {
				continue
			}
			seen[id] = true
			if err := onHit(h); err != nil {
				return err
			}
		}
		return nil
	}
	if err := emit(out.Hits.Hits); err != nil {
		return err
	}
	if len(out.Hits.Hits) < page {
		return nil
	}
	var pit struct {
		PitID string `json:"pit_id"`
	}
	if err := e.s.os.Do(ctx, http.MethodPost, "/"+stats.Index+"/_search/point_in_time?keep_alive=1m", nil, &pit); err != nil {
		return fmt.Errorf("searcher: open point in time on %s: %w", stats.Index, err)
	}
	defer func() {
		// Closed even when the search was cancelled, but never for long:
		// the point in time expires by itself after keep_alive anyway.
		raw, _ := json.Marshal(obj{"pit_id": arr{pit.PitID}})
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = e.s.os.Do(closeCtx, http.MethodDelete, "/_search/point_in_time", raw, nil)
	}()
	last := out.Hits.Hits[len(out.Hits.Hits)-1].Sort
	for {
		body["pit"] = obj{"id": pit.PitID, "keep_alive": "1m"}
		body["search_after"] = last
		out, err = e.search(ctx, stats, "/_search", body)
		if err != nil {
			return err
		}
		if err := emit(out.Hits.Hits); err != nil {
			return err
		}
		if out.PitID != "" {
			pit.PitID = out.PitID
		}
		if len(out.Hits.Hits) < page {
			return nil
		}
		last = out.Hits.Hits[len(out.Hits.Hits)-1].Sort
	}
}

func sortInts(raw []json.RawMessage) ([]int64, error) {
	out := make([]int64, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("searcher: sort value %s is not an integer: %w", r, err)
		}
	}
	return out, nil
}
