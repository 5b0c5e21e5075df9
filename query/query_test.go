package query

import (
	"errors"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseRequestRejectsBadInputNamingTheField(t *testing.T) {
	cases := []struct {
		query, field string
		allowed      bool
	}{
		{"sort=cheapest", "sort", true},
		{"category=햄버거집", "category", true},
		{"lat=37.5", "lat", false},
		{"lat=91&lon=127", "lat", false},
		{"lon=abc&lat=37", "lon", false},
		{"size=101", "size", false},
		{"page=0", "page", false},
		{"page=200&size=100", "page", false},
		{"min_price=5000&max_price=1000", "min_price", false},
		{"open_now=yes", "open_now", true},
		{"sort=distance", "sort", false},
		{"min_rating=6", "min_rating", false},
		{"colour=red", "colour", true},
		{"q=" + strings.Repeat("가", 101), "q", false},
		{"q=" + url.QueryEscape("a b c d e f g h i"), "q", false}, // nine different words
	}
	for _, tc := range cases {
		v, _ := url.ParseQuery(tc.query)
		_, err := ParseRequest(v)
		fe, ok := err.(*FieldError)
		if !ok {
			t.Errorf("%s: err = %v, want a *FieldError", tc.query, err)
			continue
		}
		if fe.Field != tc.field {
			t.Errorf("%s: field %q, want %q", tc.query, fe.Field, tc.field)
		}
		if tc.allowed && len(fe.Allowed) == 0 {
			t.Errorf("%s: the error should list the allowed values", tc.query)
		}
	}
}

func TestParseRequestRoundTrip(t *testing.T) {
	raw := "q=%EC%B9%98%ED%82%A8&lat=37.5&lon=127.03&open_now=true&category=%EC%B9%98%ED%82%A8&max_delivery_fee=3000&min_rating=4.5&min_price=10000&max_price=30000&max_total_fee=4000&sort=eta&page=3&size=10&explain=true"
	v, _ := url.ParseQuery(raw)
	r, err := ParseRequest(v)
	if err != nil {
		t.Fatal(err)
	}
	if r.Q != "치킨" || *r.Lat != 37.5 || !r.OpenNow || *r.MaxTotalFee != 4000 || r.Sort != SortETA || r.From() != 20 {
		t.Fatalf("parsed %+v", r)
	}
	again, err := ParseRequest(r.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, again) {
		t.Fatalf("Encode/Parse changed the request:\n%+v\n%+v", r, again)
	}
}

// A repeated word counts once: the 100-character query of one
// word 33 times took seconds on every layout.
func TestParseRequestCountsARepeatedWordOnce(t *testing.T) {
	cases := map[string]string{
		strings.Repeat("치킨 ", 33) + "치": "치킨 치",
		"  피자   치킨 피자 ":                 "피자 치킨",
		"BBQ bbq 치킨 Bbq":                "BBQ 치킨",
		"a b c d e f g h a b":           "a b c d e f g h",
	}
	for in, want := range cases {
		r, err := ParseRequest(url.Values{"q": {in}})
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if r.Q != want {
			t.Errorf("%q: Q = %q, want %q", in, r.Q, want)
		}
	}
}

func names(p Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Name())
	}
	return out
}

func TestPlanSteps(t *testing.T) {
	f := func(n float64) *float64 { return &n }
	i := func(n int) *int { return &n }
	cases := []struct {
		name    string
		req     Request
		steps   []string
		carries []Carry
	}{
		{
			name:  "no menu predicate: menu query dropped, shop phases merged",
			req:   Request{Lat: f(37.5), Lon: f(127), OpenNow: true, Sort: SortRating},
			steps: []string{"shops:query+decision+fetch", "menus:fetch"},
		},
		{
			name:    "text search: menu query first, as in the write-up",
			req:     Request{Q: "피자", Lat: f(37.5), Lon: f(127), Sort: SortRelevance},
			steps:   []string{"menus:query", "shops:query+decision+fetch", "menus:fetch"},
			carries: []Carry{CarryIDs, CarryScore},
		},
		{
			name:    "text with a non-relevance sort carries no score",
			req:     Request{Q: "피자", Sort: SortDeliveryFee},
			steps:   []string{"menus:query", "shops:query+decision+fetch", "menus:fetch"},
			carries: []Carry{CarryIDs},
		},
		{
			name:    "inseparable filter and sort carry the menu minimums",
			req:     Request{Q: "치킨", MaxTotalFee: i(3000), Sort: SortETA},
			steps:   []string{"menus:query", "shops:query+decision+fetch", "menus:fetch"},
			carries: []Carry{CarryIDs, CarryMinExtraFee, CarryMinCookMinutes},
		},
		{
			name:    "eta sort with very selective shop filters: shop query first",
			req:     Request{OpenNow: true, MaxDeliveryFee: i(0), MinRating: f(4.8), Sort: SortETA},
			steps:   []string{"shops:query", "menus:query", "shops:decision+fetch", "menus:fetch"},
			carries: []Carry{CarryIDs, CarryMinCookMinutes},
		},
		{
			name:  "price range alone is a menu predicate",
			req:   Request{MaxPrice: i(10000), Sort: SortRelevance},
			steps: []string{"menus:query", "shops:query+decision+fetch", "menus:fetch"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanSteps(tc.req)
			if got := names(p); !slices.Equal(got, tc.steps) {
				t.Fatalf("steps %v, want %v (reasons %v)", got, tc.steps, p.Reasons)
			}
			if tc.carries != nil {
				var got []Carry
				for _, s := range p.Steps {
					if s.Index == IndexMenus && s.Has(PhaseQuery) {
						got = s.Carries
					}
				}
				if !slices.Equal(got, tc.carries) {
					t.Errorf("menu query carries %v, want %v", got, tc.carries)
				}
			}
			for i, s := range p.Steps {
				if i > 0 && !s.Restricted && s.Index != p.Steps[0].Index {
					t.Errorf("step %s after the first must be restricted to earlier candidates", s.Name())
				}
				if i > 0 && p.Steps[i-1].Index == s.Index {
					t.Errorf("consecutive steps %s and %s on one index were not merged", p.Steps[i-1].Name(), s.Name())
				}
				if s.Index == IndexMenus && s.Has(PhaseDecision) {
					t.Errorf("menu decision should be dropped")
				}
			}
		})
	}
	if got := names(PlanNested()); !slices.Equal(got, []string{"nested:query+decision+fetch"}) {
		t.Errorf("nested plan %v", got)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add("q=치킨&lat=37.5&lon=127&sort=eta&page=2")
	f.Add("max_total_fee=-1&size=0")
	f.Add("%zz=1")
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		r, err := ParseRequest(v)
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("non-field error %T %v", err, err)
			}
			return
		}
		if r.Size > MaxSize || r.Page < 1 || r.Page*r.Size > MaxWindow {
			t.Fatalf("accepted out-of-range paging %+v", r)
		}
	})
}

// explain is true, false or dsl (nothing else, not even 1 or 0, as
// api/openapi.json's enum says); dsl implies the plan too, and round-trips.
func TestExplainParameter(t *testing.T) {
	for _, tc := range []struct {
		in        string
		plan, dsl bool
	}{{"false", false, false}, {"true", true, false}, {"dsl", true, true}} {
		r, err := ParseRequest(url.Values{"explain": {tc.in}})
		if err != nil || r.Explain != tc.plan || r.ExplainDSL != tc.dsl {
			t.Errorf("explain=%q: Explain %v ExplainDSL %v err %v; want %v %v", tc.in, r.Explain, r.ExplainDSL, err, tc.plan, tc.dsl)
		}
		if again, err := ParseRequest(r.Encode()); err != nil || again.Explain != r.Explain || again.ExplainDSL != r.ExplainDSL {
			t.Errorf("explain=%q does not round-trip: %+v %v", tc.in, again, err)
		}
	}
	for _, in := range []string{"DSL", "1", "0", "True", "yes"} {
		_, err := ParseRequest(url.Values{"explain": {in}})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "explain" || !slices.Contains(fe.Allowed, "dsl") {
			t.Errorf("explain=%s: %v, want a field error allowing dsl", in, err)
		}
	}
}

// A parameter given with an empty value is refused, naming it, whatever its
// type (q included: leave it out for a search without text); so is a text
// of white space alone. Values are spelled the way api/openapi.json
// serializes them: integers in plain decimal, numbers in decimal digits,
// booleans true or false.
func TestParseRequestRefusesEmptyAndOddlySpelledValues(t *testing.T) {
	for _, raw := range []string{
		"q=", "lat=&lon=127", "lat=37.5&lon=", "open_now=", "category=", "max_delivery_fee=", "min_rating=",
		"min_price=0&max_price=", "max_total_fee=", "sort=", "page=", "size=", "explain=", "layout=",
		"q=%20", "q=%20%E3%80%80%09", // white space alone, ideographic space included
		"size=05", "size=%2B5", "page=-0", "min_price=1e3", "max_delivery_fee=0x10",
		"min_rating=0x1p1", "min_rating=Inf", "min_rating=NaN", "min_rating=1_0", "lat=4_0&lon=127",
		"open_now=1", "open_now=0", "open_now=TRUE", "open_now=t",
		"q=" + strings.Repeat("a", MaxQueryRune) + "%20", // 101 characters before trimming
	} {
		v, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatal(err)
		}
		field := strings.SplitN(raw, "=", 2)[0]
		if strings.HasPrefix(raw, "lat=37.5&lon=") {
			field = "lon"
		}
		if strings.HasPrefix(raw, "min_price=0&") {
			field = "max_price"
		}
		_, err = ParseRequest(v)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: err %v, want a field error naming %s", raw, err, field)
		}
	}
	// The spellings a generated client sends are taken; a text of symbols
	// alone is a text query like any other (it matches no menu).
	for _, raw := range []string{"size=0", "min_price=0&max_price=10000000", "lat=-90&lon=180", "lat=37.5&lon=-127",
		"min_rating=4.5", "min_rating=5", "min_rating=0.5e1", "lat=%2B37.5&lon=127", "open_now=true", "open_now=false",
		"q=%C2%B1", "q=!!!", "q=%20%EC%B9%98%ED%82%A8%20"} {
		v, _ := url.ParseQuery(raw)
		if _, err := ParseRequest(v); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}
