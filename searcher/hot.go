package searcher

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

// hot runs the hot layout: one request on the hot menu index, which holds
// every cold shop field and the menus. The baedal-hot plugin filters and
// sorts on the hot fields it holds in memory (docs/hot-layout.md) and adds
// them to each hit; text, location, cold filters, matched menus and
// highlights are the same clauses as in the other layouts.
func (e *execution) hot(ctx context.Context) (*Response, error) {
	r := e.req
	table := e.s.idx.Alias(layout.RoleHotShops)
	filter := append(coldShopFilters(r, nativeDeliveryArea), hotTableFilter(table, r))
	if r.MaxTotalFee != nil {
		// The inseparable predicate: some matched menu with the shop's
		// delivery_fee + its extra_fee within the bound.
		withFee := obj{"bool": obj{"filter": arr{
			menuPredicate(r, e.s.cfg.Rank, false, nil),
			obj{"baedal_hot_menu": obj{"table": table, "max_total_fee": *r.MaxTotalFee}},
		}}}
		filter = append(filter, nestedMenus(withFee, nil))
	}
	body := obj{
		"query":            oneRequestQuery(r, e.s.cfg.Rank, filter),
		"sort":             sortClauses(r, e.s.cfg.Rank, nil, table),
		"from":             r.From(),
		"size":             r.Size,
		"track_total_hits": true,
		"_source":          obj{"excludes": arr{"menus"}},
		"ext":              obj{"baedal_hot": obj{"table": table}},
	}
	addDeliversField(body, r)
	resp, err := e.oneRequest(ctx, e.s.idx.Alias(layout.RoleHotMenus), body)
	if err != nil {
		return nil, err
	}
	for kind, n := range hotDisagreements(r, resp.Shops) {
		e.s.hotDisagreements.WithLabelValues(kind).Add(float64(n))
	}
	return resp, nil
}

// hotDisagreements re-checks a page against the hot values it returns: each
// shop must satisfy the request's hot predicates and, under open_now, deliver
// to the request's location ("filter"), and a sort on a
// hot field must be ordered by the values shown ("order"). The plugin reads
// one row per shop for a whole shard request (filter, sort and fetch), so
// any disagreement is a defect, counted by kind.
func hotDisagreements(r *query.Request, shops []ShopHit) map[string]int {
	out := map[string]int{}
	for i := range shops {
		sh := &shops[i]
		if (r.OpenNow && (!sh.Open || (sh.Delivers != nil && !*sh.Delivers))) || (r.MaxDeliveryFee != nil && sh.DeliveryFee > *r.MaxDeliveryFee) ||
			(r.MinRating != nil && sh.Rating < *r.MinRating) {
			out["filter"]++
		}
		if i == 0 {
			continue
		}
		prev := &shops[i-1]
		switch r.Sort {
		case query.SortDeliveryMinutes:
			if sh.DeliveryMinutes < prev.DeliveryMinutes {
				out["order"]++
			}
		case query.SortDeliveryFee:
			if sh.DeliveryFee < prev.DeliveryFee {
				out["order"]++
			}
		case query.SortRating:
			if sh.Rating > prev.Rating {
				out["order"]++
			}
		}
	}
	return out
}

// hotTableFilter is the plugin's shop-level filter on the hot fields the
// request constrains. It is there even when the request constrains none:
// a shop is in the hot layout while the table holds it live, as a split
// shop is while its head document exists, so a menu document whose shop
// the table does not hold yet (its head is written after the menu
// document) or no longer holds (a delete's tombstone head, before the next
// refresh hides the menu document) is never a hit. Without it such a hit came back without
// its hot fields.
func hotTableFilter(table string, r *query.Request) obj {
	f := obj{"table": table}
	if r.OpenNow {
		f["open"] = true
	}
	if r.MaxDeliveryFee != nil {
		f["max_delivery_fee"] = *r.MaxDeliveryFee
	}
	if r.MinRating != nil {
		f["min_rating"] = *r.MinRating
	}
	return obj{"baedal_hot_shop": f}
}

// hotSort is the plugin's sort on a hot field (or eta, which needs the
// matched-menu filter in nested).
func hotSort(table, field, order string, nested obj) obj {
	s := obj{"table": table, "field": field, "order": order}
	if nested != nil {
		s["nested"] = nested
	}
	return obj{"baedal_hot": s}
}

// hotRankSort is the plugin's relevance sort: the formula of package rank
// over the query's score, the table's hot fields and the document's
// location, in Java (HotRankSortBuilder), with the parameters the Painless
// script of the other layouts gets.
func hotRankSort(table string, params obj) obj {
	return obj{"baedal_hot_rank": obj{"table": table, "params": params}}
}

// hotFields is what the plugin adds to a hit: the shop's row of the table.
type hotFields struct {
	Version         int64   `json:"version"`
	Open            bool    `json:"open"`
	DeliveryMinutes int     `json:"delivery_minutes"`
	DeliveryFee     int     `json:"delivery_fee"`
	Rating          float64 `json:"rating"`
	ReviewCount     int     `json:"review_count"`
}

// overlayHotFields sets the hot fields and the version of a hit from the
// table's row: the hot menu document holds neither.
func overlayHotFields(sh *ShopHit, h hit) error {
	rows := h.Fields["baedal_hot"]
	if len(rows) != 1 {
		// The query phase matched the shop only while the table held it
		// live (hotTableFilter): its row went away, a delete, before the
		// fetch phase read it. A retry answers without the shop.
		return fmt.Errorf("%w: hot layout hit %s has %d baedal_hot rows, want 1: the shop left the table between the query and the fetch", ErrPartialResults, h.ID, len(rows))
	}
	var f hotFields
	if err := json.Unmarshal(rows[0], &f); err != nil {
		return fmt.Errorf("searcher: decode the baedal_hot row of shop %s: %w", h.ID, err)
	}
	sh.Version = f.Version
	sh.Open, sh.DeliveryMinutes, sh.DeliveryFee = f.Open, f.DeliveryMinutes, f.DeliveryFee
	sh.Rating, sh.ReviewCount = f.Rating, f.ReviewCount
	return nil
}
