package searcher

import (
	"slices"
	"strings"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher/rank"
)

// obj and arr keep the query DSL readable.
type obj = map[string]any
type arr = []any

// WordsToMatch is the minimum_should_match policy of text search over the
// words of the text (split at white space): a text of one or two words must
// match every word, a longer one at least 75% of its words (rounded down).
// Without it the analyzed terms were OR-ed: "존재하지않는메뉴xyz" matched
// nearly every shop through 메뉴, the one term of it that menu descriptions
// share.
const WordsToMatch = "2<75%"

// textQuery matches the query text against a menu, its description and the
// shop name copied into every menu, plus n-grams for partial words. The same
// query runs in every layout, on the nested menus of each.
//
// A word matches when all of its analyzed terms are in one of the three
// fields (operator and: nori's compounds count whole, 양념치킨 matches
// 양념치킨 or 양념 and 치킨), or when 75% of its n-grams are in the menu name
// or the shop name; different words may match different fields. With
// rc.Synonyms a word is matched by each of its forms (query.WordForms: burger
// also as 버거), scored by its best form (dis_max). The text matches when
// WordsToMatch of its words do. A menu's score is the sum of the boosts of
// the clauses that matched (boolean similarity); when scoring, the whole
// text as a phrase in the shop name (rc.ShopNameBoost) or in the menu name
// (rc.PhraseBoost) adds its boost on top, once per phrase form that
// matches, without changing what matches. A text of several words also
// adds rc.ShopNameBoost for each of its words in the shop name (each form
// that matches, as for a text of that one word): a shop whose name holds
// a word of the text (교촌치킨 for 후라이드 치킨) is a shop-name match, as
// the one-word text 치킨 would find it.
func textQuery(q string, rc rank.Config, scoring bool) obj {
	// Distinct, as ParseRequest leaves them: a request built in Go may
	// repeat a word, which would repeat its clauses and phrases.
	words := query.DistinctWords(q)
	clauses := make(arr, len(words))
	for i, w := range words {
		forms := query.WordForms(w, rc.Synonyms)
		alternatives := make(arr, len(forms))
		for j, f := range forms {
			alternatives[j] = wordClause(f)
		}
		clauses[i] = alternatives[0]
		if len(alternatives) > 1 {
			clauses[i] = obj{"dis_max": obj{"queries": alternatives}}
		}
	}
	match := obj{"bool": obj{"should": clauses, "minimum_should_match": WordsToMatch}}
	if !scoring || (rc.ShopNameBoost == 0 && rc.PhraseBoost == 0) {
		return match
	}
	phrases := phraseForms(words, rc.Synonyms)
	var bonus arr
	for _, b := range []struct {
		field   string
		boost   float64
		phrases []string
	}{{"menus.shop_name", rc.ShopNameBoost, shopNamePhrases(words, rc.Synonyms)}, {"menus.name", rc.PhraseBoost, phrases}} {
		if b.boost == 0 {
			continue
		}
		alternatives := make(arr, len(b.phrases))
		for i, p := range b.phrases {
			alternatives[i] = obj{"match_phrase": obj{b.field: obj{"query": p}}}
		}
		// Summed, not the best: a phrase form can lose its telling word
		// to the analyzer (nori keeps only 치킨 of 비비큐치킨), so the
		// shop matching every form (BBQ치킨 also as bbq 치킨) is the better
		// match.
		bonus = append(bonus, obj{"bool": obj{"should": alternatives, "boost": b.boost}})
	}
	return obj{"bool": obj{"must": arr{match}, "should": bonus}}
}

// wordClause matches one form of a word: its whole terms in the menu name
// (3), the shop name (2) or the description (1), or 75% of its n-grams in
// the menu name or the shop name (0.5 each).
func wordClause(w string) obj {
	whole := func(field string, boost float64) obj {
		return obj{"match": obj{field: obj{"query": w, "boost": boost, "operator": "and"}}}
	}
	partial := func(field string) obj {
		return obj{"match": obj{field: obj{"query": w, "boost": 0.5, "minimum_should_match": "75%"}}}
	}
	return obj{"bool": obj{
		"should": arr{
			whole("menus.name", 3), whole("menus.shop_name", 2), whole("menus.description", 1),
			partial("menus.name.ngram"), partial("menus.shop_name.ngram"),
		},
		"minimum_should_match": 1,
	}}
}

// maxPhraseForms bounds the phrases of the phrase clauses.
const maxPhraseForms = 4

// phraseForms is the text as a phrase and, with synonyms, the text with one
// word replaced by one of its other forms (비비큐 치킨 → bbq 치킨), at most
// maxPhraseForms in all.
func phraseForms(words []string, synonyms bool) []string {
	out := []string{strings.Join(words, " ")}
	if !synonyms {
		return out
	}
	for i, w := range words {
		for _, f := range query.Synonyms(w) {
			if len(out) == maxPhraseForms {
				return out
			}
			replaced := slices.Clone(words)
			replaced[i] = f
			out = append(out, strings.Join(replaced, " "))
		}
	}
	return out
}

// shopNamePhrases are the phrases of the shop-name clause: the text's
// phrase forms and, for a text of several words, each word's own (the
// forms of the one-word text), each phrase once.
func shopNamePhrases(words []string, synonyms bool) []string {
	out := phraseForms(words, synonyms)
	if len(words) < 2 {
		return out
	}
	for _, w := range words {
		for _, p := range phraseForms([]string{w}, synonyms) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// menuPredicate is the bool query a menu must satisfy to be "matched": the
// text (if any) and the price range (if any). withTotalFee adds the nested
// layout's per-menu total_fee bound. scoring keeps the text in a scoring
// clause; otherwise everything is a filter.
func menuPredicate(r *query.Request, rc rank.Config, scoring bool, maxTotalFee *int) obj {
	var filter, must arr
	if r.HasPriceRange() {
		rng := obj{}
		if r.MinPrice != nil {
			rng["gte"] = *r.MinPrice
		}
		if r.MaxPrice != nil {
			rng["lte"] = *r.MaxPrice
		}
		filter = append(filter, obj{"range": obj{"menus.price": rng}})
	}
	if maxTotalFee != nil {
		filter = append(filter, obj{"range": obj{"menus.total_fee": obj{"lte": *maxTotalFee}}})
	}
	if r.Q != "" {
		if scoring {
			must = append(must, textQuery(r.Q, rc, true))
		} else {
			filter = append(filter, textQuery(r.Q, rc, false))
		}
	}
	b := obj{}
	if len(filter) > 0 {
		b["filter"] = filter
	}
	if len(must) > 0 {
		b["must"] = must
	}
	if len(b) == 0 {
		return obj{"match_all": obj{}}
	}
	return obj{"bool": b}
}

// nestedMenus wraps a menu predicate; scoreMode "max" scores a shop by its
// best matched menu.
func nestedMenus(pred obj, innerHits obj) obj {
	n := obj{"path": "menus", "query": pred, "score_mode": "max"}
	if innerHits != nil {
		n["inner_hits"] = innerHits
	}
	return obj{"nested": n}
}

// matchedMenusInnerHits returns up to 3 matched menus, with highlights when
// the request has text. The highlighter is given only the clauses on the two
// highlighted fields: the full text query also has n-gram and shop-name
// clauses, which cannot add highlights to these fields (a field is
// highlighted by clauses on itself), yet made the highlighter cost ~2x.
func matchedMenusInnerHits(q string, rc rank.Config) obj {
	ih := obj{
		"name": "matched",
		"size": 3,
		"_source": obj{"includes": arr{"menus.id", "menus.name", "menus.description", "menus.price", "menus.extra_fee",
			"menus.cook_minutes", "menus.popular", "menus.sold_out"}},
	}
	if q != "" {
		ih["highlight"] = obj{
			"pre_tags": arr{"<em>"}, "post_tags": arr{"</em>"},
			// Whole values, not sentence fragments: a menu name is short.
			"fields":          obj{"menus.name": obj{"number_of_fragments": 0}, "menus.description": obj{"number_of_fragments": 0}},
			"highlight_query": obj{"bool": obj{"should": arr{matchField("menus.name", highlightText(q, rc)), matchField("menus.description", highlightText(q, rc))}}},
		}
	}
	return ih
}

func matchField(field, q string) obj { return obj{"match": obj{field: obj{"query": q}}} }

// highlightText is the text whose terms are highlighted: the words and,
// with synonyms, their other forms (a search for burger marks 버거).
func highlightText(q string, rc rank.Config) string {
	var forms []string
	for _, w := range query.DistinctWords(q) {
		forms = append(forms, query.WordForms(w, rc.Synonyms)...)
	}
	return strings.Join(forms, " ")
}

// coldShopFilters are the filters on cold shop fields, present in both split
// indices (copied into the menu index): category and, with a location, the
// delivery area. The area is the largest delivery radius any shop may have
// (catalog.MaxDeliveryRadiusKm), a cheap geo_distance filter, so that a
// shop no radius could bring to the user is never a candidate; within it,
// a shop outside its own radius stays visible (marked delivers: false, and
// sunk by the relevance formula) unless open_now asks for the shops that
// can take an order now, which adds the per-shop radius filter given by
// deliveryArea.
func coldShopFilters(r *query.Request, deliveryArea func(point obj) obj) arr {
	var f arr
	if r.Category != "" {
		f = append(f, obj{"term": obj{"category": r.Category}})
	}
	if r.HasLocation() {
		point := obj{"lat": *r.Lat, "lon": *r.Lon}
		f = append(f, obj{"geo_distance": obj{"distance": formatKm(catalog.MaxDeliveryRadiusKm), "location": point}})
		if r.OpenNow {
			f = append(f, deliveryArea(point))
		}
	}
	return f
}

// scriptDeliveryArea is the per-shop delivery radius as a Painless filter,
// what OpenSearch offers without a plugin (nested and split). A shop without
// a location or radius delivers nowhere.
func scriptDeliveryArea(point obj) obj {
	return obj{"script": obj{"script": obj{"source": rank.DeliversScript, "params": point}}}
}

// deliversField is the script field of a page's hits that says whether the
// user's location is within the shop's delivery radius (ShopHit.Delivers),
// the same test as scriptDeliveryArea and the relevance formula's, for
// every layout: it runs on the page's hits only, not per candidate. nil
// without a location.
func deliversField(r *query.Request) obj {
	if !r.HasLocation() {
		return nil
	}
	return obj{deliversFieldName: obj{"script": obj{"source": rank.DeliversScript, "params": obj{"lat": *r.Lat, "lon": *r.Lon}}}}
}

const deliversFieldName = "delivers"

// nativeDeliveryArea is the same filter from the baedal-hot plugin (the hot
// layout): the same field data and distance function, no script per
// candidate (docs/hot-layout.md).
func nativeDeliveryArea(point obj) obj {
	return obj{"baedal_within_delivery_radius": point}
}

// hotShopFilters are the filters on hot shop fields: only in the shop index.
func hotShopFilters(r *query.Request) arr {
	var f arr
	if r.OpenNow {
		f = append(f, obj{"term": obj{"open": true}})
	}
	if r.MaxDeliveryFee != nil {
		f = append(f, obj{"range": obj{"delivery_fee": obj{"lte": *r.MaxDeliveryFee}}})
	}
	if r.MinRating != nil {
		f = append(f, obj{"range": obj{"rating": obj{"gte": *r.MinRating}}})
	}
	return f
}

func idAsc() obj { return obj{"id": obj{"order": "asc"}} }

func formatKm(km float64) string {
	return trimFloat(km) + "km"
}
