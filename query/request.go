// Package query is the pure half of search: it parses a search request and
// plans it as steps over the split layout's two indices (or one step on the
// nested baseline). It talks to no server; package searcher executes plans.
//
// Invariant: PlanSteps is a pure function of the request; the plan fully
// decides which index each step reads, which phases it merges, and which
// per-shop values are carried from one step to the next.
package query

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/baedal/baedal/catalog"
)

// Sort is a result order.
type Sort string

// The sorts a search accepts. ETA is delivery_minutes plus the cook_minutes
// of the fastest matched menu: it needs a hot shop field and a menu field
// together, so it cannot be split into a shop sort and a menu sort.
const (
	SortRelevance       Sort = "relevance"
	SortDistance        Sort = "distance"
	SortDeliveryMinutes Sort = "delivery_minutes"
	SortRating          Sort = "rating"
	SortDeliveryFee     Sort = "delivery_fee"
	SortETA             Sort = "eta"
)

// Sorts lists every accepted sort.
func Sorts() []string {
	return []string{string(SortRelevance), string(SortDistance), string(SortDeliveryMinutes), string(SortRating), string(SortDeliveryFee), string(SortETA)}
}

// Limits of a request. The text is matched word by word, each word by five
// clauses (docs/search.md), so MaxQueryWords bounds a search's clauses at
// 5*MaxQueryWords; MaxQueryRune bounds the n-grams of its words.
const (
	MaxSize       = 100
	MaxQueryRune  = 100
	MaxQueryWords = 8
	// MaxWindow is the deepest result a page may reach (page*size), the
	// indices' max_result_window.
	MaxWindow = 10000
)

// Request is one search. Pointers are optional filters.
type Request struct {
	Q              string
	Lat, Lon       *float64
	OpenNow        bool
	Category       string
	MaxDeliveryFee *int
	MinRating      *float64
	MinPrice       *int
	MaxPrice       *int
	// MaxTotalFee keeps shops with a matched menu whose shop delivery_fee +
	// menu extra_fee is at most this: inseparable, over a hot shop field.
	MaxTotalFee *int
	Sort        Sort
	Page, Size  int
	// Explain adds the executed plan to the response (explain=true), and
	// ExplainDSL also each request body sent to OpenSearch (explain=dsl,
	// which sets both); explain=false is neither.
	Explain    bool
	ExplainDSL bool
}

// HasLocation reports whether the request has a user location.
func (r *Request) HasLocation() bool { return r.Lat != nil && r.Lon != nil }

// HasPriceRange reports whether a menu price filter is set.
func (r *Request) HasPriceRange() bool { return r.MinPrice != nil || r.MaxPrice != nil }

// From is the offset of the page's first result.
func (r *Request) From() int { return (r.Page - 1) * r.Size }

// FieldError is a request error naming the parameter.
type FieldError struct {
	Field   string
	Detail  string
	Allowed []string
}

func (e *FieldError) Error() string {
	msg := fmt.Sprintf("query: %s: %s", e.Field, e.Detail)
	if len(e.Allowed) > 0 {
		msg += "; allowed: " + strings.Join(e.Allowed, ", ")
	}
	return msg
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

var knownParams = []string{"q", "lat", "lon", "open_now", "category", "max_delivery_fee", "min_rating",
	"min_price", "max_price", "max_total_fee", "sort", "page", "size", "explain", "layout"}

// Params lists the URL parameters of a search, layout included (the
// server's route takes exactly these).
func Params() []string { return slices.Clone(knownParams) }

// ParseRequest reads a request from URL parameters (the layout parameter is
// the caller's). Unknown parameters are refused, so a typo never silently
// drops a filter, and so is a parameter given with an empty value: a filter
// is either left out or given a value. Values are written the one way
// api/openapi.json serializes them: integers in plain decimal ("5", never
// "+5" or "05"), numbers in decimal digits (no hex, Inf or NaN), booleans
// as true or false.
func ParseRequest(v url.Values) (Request, error) {
	for name := range v {
		if !slices.Contains(knownParams, name) {
			return Request{}, &FieldError{Field: name, Detail: "unknown parameter", Allowed: knownParams}
		}
	}
	for _, name := range knownParams {
		if vs, ok := v[name]; ok && (len(vs) == 0 || vs[0] == "") {
			return Request{}, fieldErr(name, "is empty: give a value or leave the parameter out")
		}
	}
	r := Request{Sort: SortRelevance, Page: 1, Size: 20}
	if q, ok := v["q"]; ok {
		if !utf8.ValidString(q[0]) {
			return r, fieldErr("q", "is not valid UTF-8")
		}
		if n := utf8.RuneCountInString(q[0]); n > MaxQueryRune {
			return r, fieldErr("q", "has %d characters, at most %d allowed", n, MaxQueryRune)
		}
		r.Q = strings.TrimSpace(q[0])
		if r.Q == "" {
			return r, fieldErr("q", "is only white space: give text or leave q out")
		}
	}
	words := DistinctWords(r.Q)
	if len(words) > MaxQueryWords {
		return r, fieldErr("q", "has %d different words, at most %d allowed (a repeated word counts once)", len(words), MaxQueryWords)
	}
	r.Q = strings.Join(words, " ")
	var err error
	if r.Lat, err = optFloat(v, "lat", -90, 90); err != nil {
		return r, err
	}
	if r.Lon, err = optFloat(v, "lon", -180, 180); err != nil {
		return r, err
	}
	if (r.Lat == nil) != (r.Lon == nil) {
		return r, fieldErr("lat", "lat and lon must be given together")
	}
	if r.OpenNow, err = optBool(v, "open_now"); err != nil {
		return r, err
	}
	if c := v.Get("category"); c != "" {
		if !slices.Contains(catalog.Categories(), c) {
			return r, &FieldError{Field: "category", Detail: fmt.Sprintf("unknown category %q", c), Allowed: catalog.Categories()}
		}
		r.Category = c
	}
	if r.MaxDeliveryFee, err = optInt(v, "max_delivery_fee", 0, 1_000_000); err != nil {
		return r, err
	}
	if r.MinRating, err = optFloat(v, "min_rating", 0, 5); err != nil {
		return r, err
	}
	if r.MinPrice, err = optInt(v, "min_price", 0, 10_000_000); err != nil {
		return r, err
	}
	if r.MaxPrice, err = optInt(v, "max_price", 0, 10_000_000); err != nil {
		return r, err
	}
	if r.MinPrice != nil && r.MaxPrice != nil && *r.MinPrice > *r.MaxPrice {
		return r, fieldErr("min_price", "%d is greater than max_price %d", *r.MinPrice, *r.MaxPrice)
	}
	if r.MaxTotalFee, err = optInt(v, "max_total_fee", 0, 1_000_000); err != nil {
		return r, err
	}
	if s := v.Get("sort"); s != "" {
		if !slices.Contains(Sorts(), s) {
			return r, &FieldError{Field: "sort", Detail: fmt.Sprintf("unknown sort %q", s), Allowed: Sorts()}
		}
		r.Sort = Sort(s)
	}
	if r.Sort == SortDistance && !r.HasLocation() {
		return r, fieldErr("sort", "distance needs lat and lon")
	}
	page, err := optInt(v, "page", 1, MaxWindow)
	if err != nil {
		return r, err
	}
	if page != nil {
		r.Page = *page
	}
	size, err := optInt(v, "size", 0, MaxSize)
	if err != nil {
		return r, err
	}
	if size != nil {
		r.Size = *size
	}
	if r.Page*r.Size > MaxWindow {
		return r, fieldErr("page", "page %d of size %d reaches result %d; at most %d results can be paged (narrow the search)", r.Page, r.Size, r.Page*r.Size, MaxWindow)
	}
	switch s := v.Get("explain"); s {
	case "", "false":
	case "true":
		r.Explain = true
	case "dsl":
		r.Explain, r.ExplainDSL = true, true
	default:
		return r, &FieldError{Field: "explain", Detail: fmt.Sprintf("got %q", s), Allowed: []string{"true", "false", "dsl"}}
	}
	return r, nil
}

// DistinctWords splits text at white space and keeps the first occurrence
// of each word: a repeated word adds nothing to what matches (every word
// is required up to WordsToMatch) but would add its clauses again. Words
// that differ only in case are one word, as the lowercasing analyzers see
// them.
func DistinctWords(text string) []string {
	var words []string
	for _, w := range strings.Fields(text) {
		if !slices.ContainsFunc(words, func(seen string) bool { return strings.EqualFold(seen, w) }) {
			words = append(words, w)
		}
	}
	return words
}

// optFloat parses the optional parameter name, a number in lo..hi written
// in decimal digits: an optional sign, digits, a point, an exponent. Go's
// other float syntaxes (hex, '_' between digits, Inf, NaN) are refused.
func optFloat(v url.Values, name string, lo, hi float64) (*float64, error) {
	s := v.Get(name)
	if s == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || strings.ContainsFunc(s, notDecimal) || f < lo || f > hi {
		return nil, fieldErr(name, "got %q, want a number in %g..%g written in decimal", s, lo, hi)
	}
	return &f, nil
}

// notDecimal reports whether c cannot appear in a decimal number.
func notDecimal(c rune) bool { return !strings.ContainsRune("+-.0123456789eE", c) }

// optInt parses the optional parameter name, an integer in lo..hi written
// in plain decimal ("0" or digits without a leading zero, after an
// optional '-').
func optInt(v url.Values, name string, lo, hi int) (*int, error) {
	s := v.Get(name)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(n) != s || n < lo || n > hi {
		return nil, fieldErr(name, "got %q, want an integer in %d..%d written in plain decimal (no sign '+', no leading zero)", s, lo, hi)
	}
	return &n, nil
}

// optBool parses the optional parameter name: true or false.
func optBool(v url.Values, name string) (bool, error) {
	switch s := v.Get(name); s {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, &FieldError{Field: name, Detail: fmt.Sprintf("got %q", s), Allowed: []string{"true", "false"}}
	}
}

// Encode turns a request back into URL parameters (benchmarks, tests and the
// console build requests with it).
func (r Request) Encode() url.Values {
	v := url.Values{}
	set := func(k, s string) { v.Set(k, s) }
	if r.Q != "" {
		set("q", r.Q)
	}
	if r.HasLocation() {
		set("lat", strconv.FormatFloat(*r.Lat, 'f', -1, 64))
		set("lon", strconv.FormatFloat(*r.Lon, 'f', -1, 64))
	}
	if r.OpenNow {
		set("open_now", "true")
	}
	if r.Category != "" {
		set("category", r.Category)
	}
	for _, p := range []struct {
		k string
		n *int
	}{{"max_delivery_fee", r.MaxDeliveryFee}, {"min_price", r.MinPrice}, {"max_price", r.MaxPrice}, {"max_total_fee", r.MaxTotalFee}} {
		if p.n != nil {
			set(p.k, strconv.Itoa(*p.n))
		}
	}
	if r.MinRating != nil {
		set("min_rating", strconv.FormatFloat(*r.MinRating, 'f', -1, 64))
	}
	if r.Sort != "" && r.Sort != SortRelevance {
		set("sort", string(r.Sort))
	}
	if r.Page > 1 {
		set("page", strconv.Itoa(r.Page))
	}
	if r.Size != 20 {
		set("size", strconv.Itoa(r.Size))
	}
	switch {
	case r.ExplainDSL:
		set("explain", "dsl")
	case r.Explain:
		set("explain", "true")
	}
	return v
}
