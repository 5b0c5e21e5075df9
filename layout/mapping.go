package layout

import (
	"encoding/json"
	"strings"

	"github.com/baedal/baedal/catalog"
)

// CopiedShopFields are the shop fields the split menu index carries, because
// menu-side predicates need them together with menu fields: the text query
// matches the shop name or a menu (an OR across shop and menu fields), and the
// delivery-area and category filters cut the menu step's candidates. All are
// cold; a change to one rewrites the shop's menu document too.
func CopiedShopFields() []string {
	return []string{"name", "category", "location", "delivery_radius_km"}
}

// analysis is shared by every index so text is analysed the same way in both
// layouts: nori for Korean (compounds decompounded, e.g. 페퍼로니피자 →
// 페퍼로니 + 피자, with the compound kept too) and a 2–3 character n-gram
// sub-field for partial words (떡볶 finds 떡볶이).
func analysis() map[string]any {
	return map[string]any{
		"tokenizer": map[string]any{
			"ko_tokenizer": map[string]any{"type": "nori_tokenizer", "decompound_mode": "mixed", "discard_punctuation": true},
			"ko_ngram":     map[string]any{"type": "ngram", "min_gram": 2, "max_gram": 3, "token_chars": []string{"letter", "digit"}},
		},
		"filter": map[string]any{
			"ko_pos": map[string]any{"type": "nori_part_of_speech"},
		},
		"analyzer": map[string]any{
			"ko":       map[string]any{"type": "custom", "tokenizer": "ko_tokenizer", "filter": []string{"ko_pos", "nori_readingform", "lowercase"}},
			"ko_ngram": map[string]any{"type": "custom", "tokenizer": "ko_ngram", "filter": []string{"lowercase"}},
		},
	}
}

// koText is a Korean text field with an n-gram sub-field. The boolean
// similarity scores a match by the query's boosts only, not by corpus
// statistics: BM25 depends on per-shard document counts that include deleted
// documents, and the nested layout accumulates ~31 deleted documents per shop
// update while the split layout does not, so BM25 scores would differ between
// layouts holding the same data. Relevance is therefore "which fields matched
// how many query terms", tie-broken by rating and id.
func koText(withNgram bool) map[string]any {
	f := map[string]any{"type": "text", "analyzer": "ko", "similarity": "boolean"}
	if withNgram {
		f["fields"] = map[string]any{"ngram": map[string]any{"type": "text", "analyzer": "ko_ngram", "similarity": "boolean"}}
	}
	return f
}

func typ(t string) map[string]any { return map[string]any{"type": t} }

func shopProperties() map[string]any {
	return map[string]any{
		"id": typ("long"),
		// Text search reads the shop name copied into every menu
		// (menus.shop_name); the shop-level name is only displayed, so it is
		// not analysed: a hot shop update re-indexes no text at all.
		"name":               map[string]any{"type": "keyword", "index": false, "doc_values": false},
		"category":           typ("keyword"),
		"location":           typ("geo_point"),
		"delivery_radius_km": typ("double"),
		"open":               typ("boolean"),
		"delivery_minutes":   typ("integer"),
		"delivery_fee":       typ("integer"),
		"min_order":          typ("integer"),
		"rating":             typ("double"),
		"review_count":       typ("integer"),
		"district":           typ("keyword"),
		"address":            map[string]any{"type": "keyword", "index": false, "doc_values": false},
		"phone":              map[string]any{"type": "keyword", "index": false, "doc_values": false},
		"tags":               typ("keyword"),
		"opened_on":          map[string]any{"type": "date", "format": "yyyy-MM-dd"},
		"version":            typ("long"),
	}
}

// menuProperties are the nested menu fields. extended adds the nested
// layout's per-menu copies of hot shop values (total_fee = delivery_fee +
// extra_fee, eta = delivery_minutes + cook_minutes): free there, since any
// shop update rewrites every menu anyway, and they let one request evaluate
// the inseparable predicates.
func menuProperties(extended bool) map[string]any {
	p := map[string]any{
		"id":           typ("long"),
		"name":         koText(true),
		"description":  koText(false),
		"shop_name":    koText(true),
		"price":        typ("integer"),
		"extra_fee":    typ("integer"),
		"cook_minutes": typ("integer"),
		"popular":      typ("boolean"),
		"sold_out":     typ("boolean"),
	}
	if extended {
		p["total_fee"] = typ("integer")
		p["eta"] = typ("integer")
	}
	return p
}

// IndexBody returns the create-index body of a role.
func (c *Config) IndexBody(role string) ([]byte, error) {
	var props map[string]any
	switch role {
	case RoleNested:
		props = shopProperties()
		props["menus"] = map[string]any{"type": "nested", "properties": menuProperties(true)}
	case RoleShops:
		props = shopProperties()
	case RoleHotShops:
		// The head: id, version and the hot fields (HotHeadDoc). A deleted
		// shop's head stays as a tombstone (id, version, deleted,
		// deleted_at) until its retention ends (indexer.PurgeHotTombstones).
		all := shopProperties()
		props = map[string]any{"id": all["id"], "version": all["version"], "deleted": typ("boolean"), "deleted_at": typ("date")}
		for _, f := range catalog.HotShopFields() {
			props[f] = all[f]
		}
	case RoleHotMenus:
		props = shopProperties()
		for _, f := range catalog.HotShopFields() {
			delete(props, f)
		}
		props["menus"] = map[string]any{"type": "nested", "properties": menuProperties(false)}
	case RoleMenus:
		props = map[string]any{
			"id":                 typ("long"),
			"name":               map[string]any{"type": "keyword", "index": false, "doc_values": false},
			"category":           typ("keyword"),
			"location":           typ("geo_point"),
			"delivery_radius_km": typ("double"),
			"version":            typ("long"),
			"menus":              map[string]any{"type": "nested", "properties": menuProperties(false)},
		}
	default:
		return nil, errUnknownRole(role)
	}
	s := c.Settings(role)
	index := map[string]any{
		"number_of_shards": s.Shards,
		"refresh_interval": s.RefreshInterval,
		// A shop has up to ~150 menus; the default nested limit is 10,000.
		"mapping.nested_objects.limit": 10000,
		// Candidates travel between steps as a terms filter on ids.
		"max_terms_count": 1000000,
	}
	for k, v := range s.ReplicaSettings() {
		index[k] = v
	}
	if s.TranslogDurability != "" {
		index["translog.durability"] = s.TranslogDurability
	}
	if role == RoleHotShops {
		// The baedal-hot plugin keeps a table of this index's hot fields on
		// every node holding a copy (docs/hot-layout.md); a cluster without
		// the plugin refuses the setting, so the hot layout cannot be
		// created there.
		index[HotTableSetting] = true
		// Each replica applies every operation (the plugin's listener
		// sees it); segment replication would copy files instead.
		index["replication.type"] = "DOCUMENT"
	}
	return json.Marshal(map[string]any{
		"settings": map[string]any{"index": index, "analysis": analysis()},
		"mappings": map[string]any{"dynamic": "strict", "properties": props},
	})
}

// HotTableSetting is the index setting (under "index.") that makes the
// baedal-hot plugin keep a table of a shop index's hot fields.
const HotTableSetting = "baedal_hot.table"

func errUnknownRole(role string) error {
	return &roleError{role}
}

type roleError struct{ role string }

func (e *roleError) Error() string {
	return "layout: unknown index role " + e.role + "; allowed: " + strings.Join([]string{RoleNested, RoleShops, RoleMenus, RoleHotShops, RoleHotMenus}, ", ")
}
