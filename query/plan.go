package query

import "slices"

// Index is the index a step reads.
type Index string

// The indices of the two layouts.
const (
	IndexNested   Index = "nested"
	IndexShops    Index = "shops"
	IndexMenus    Index = "menus"
	IndexHotMenus Index = "hot_menus"
)

// Phase is one of the three phases of a search on one index.
type Phase string

// Phases: query collects candidate ids (and carried values), decision sorts
// and pages the candidates, fetch reads the fields of the final page.
const (
	PhaseQuery    Phase = "query"
	PhaseDecision Phase = "decision"
	PhaseFetch    Phase = "fetch"
)

// Carry is a per-shop value one step hands to the next, the way the write-up
// carries scores in script params.
type Carry string

// Carried values. Score is the text relevance of the matched menus;
// MinExtraFee and MinCookMinutes are the smallest extra_fee and cook_minutes
// among a shop's matched menus, so the shop step can evaluate the inseparable
// max_total_fee filter and eta sort against the hot shop fields it holds.
const (
	CarryIDs            Carry = "ids"
	CarryScore          Carry = "score"
	CarryMinExtraFee    Carry = "min_extra_fee"
	CarryMinCookMinutes Carry = "min_cook_minutes"
)

// Step is one request to one index, with the phases merged into it.
type Step struct {
	Index  Index
	Phases []Phase
	// Restricted means the step only considers the previous step's candidates
	// (a terms filter on their ids).
	Restricted bool
	// Carries are the values this step produces for later steps.
	Carries []Carry
}

// Has reports whether the step runs a phase.
func (s Step) Has(p Phase) bool { return slices.Contains(s.Phases, p) }

// Name is a short label such as "menus:query".
func (s Step) Name() string {
	n := string(s.Index) + ":"
	for i, p := range s.Phases {
		if i > 0 {
			n += "+"
		}
		n += string(p)
	}
	return n
}

// Plan is the ordered list of steps, with the reasons for each decision.
type Plan struct {
	Steps   []Step
	Reasons []string
}

// NeedsMenuQuery reports whether a predicate or sort key needs menu fields:
// then the menu index must be queried for candidates, not only fetched.
func NeedsMenuQuery(r *Request) bool {
	return r.Q != "" || r.HasPriceRange() || r.MaxTotalFee != nil || r.Sort == SortETA
}

// Static selectivity estimates (fraction of shops passing), from the
// generated catalog and delivery-app traffic; they only order the steps.
const (
	selText        = 0.05 // a dish or shop word
	selPriceRange  = 0.6
	selTotalFee    = 0.5
	selOpenNow     = 0.9
	selMaxFee      = 0.5
	selMinRating   = 0.5
	shopFirstRatio = 0.25 // shop side must be 4x more selective to pay for an extra request
)

func menuSelectivity(r *Request) float64 {
	s := 1.0
	if r.Q != "" {
		s *= selText
	}
	if r.HasPriceRange() {
		s *= selPriceRange
	}
	if r.MaxTotalFee != nil {
		// Evaluated on the shop side with carried values, but it narrows
		// the candidates only after the shop step; counts as menu-side.
		s *= selTotalFee
	}
	return s
}

func shopSelectivity(r *Request) float64 {
	s := 1.0
	if r.OpenNow {
		s *= selOpenNow
	}
	if r.MaxDeliveryFee != nil {
		s *= selMaxFee
	}
	if r.MinRating != nil {
		s *= selMinRating
	}
	return s
}

// PlanSteps plans a request on the split layout. Of the six possible steps
// (query, decision, fetch on each index) the menu decision is never needed
// (every sort key is a shop field or a carried menu value that the shop
// decision evaluates), so it returns one of three fixed plans:
//   - no predicate or sort needs menu fields: shops:query+decision+fetch →
//     menus:fetch;
//   - the menu predicates are the more selective (the usual case):
//     menus:query → shops:query+decision+fetch → menus:fetch;
//   - the shop predicates are much more selective (shopFirstRatio, by the
//     static estimates above): shops:query → menus:query →
//     shops:decision+fetch → menus:fetch.
//
// Steps on the same index that follow each other are one request. The
// differential test runs every one of the three against the nested layout.
func PlanSteps(r Request) Plan {
	var p Plan
	carries := []Carry{CarryIDs}
	if r.Q != "" && r.Sort == SortRelevance {
		carries = append(carries, CarryScore)
	}
	if r.MaxTotalFee != nil {
		carries = append(carries, CarryMinExtraFee)
	}
	if r.Sort == SortETA {
		carries = append(carries, CarryMinCookMinutes)
	}
	p.Reasons = append(p.Reasons, "menu decision dropped: every sort key is a shop field or a value carried from the menu query")
	menuFetch := Step{Index: IndexMenus, Phases: []Phase{PhaseFetch}, Restricted: true}

	if !NeedsMenuQuery(&r) {
		p.Reasons = append(p.Reasons, "menu query dropped: no predicate or sort needs menu fields")
		p.Steps = []Step{
			{Index: IndexShops, Phases: []Phase{PhaseQuery, PhaseDecision, PhaseFetch}},
			menuFetch,
		}
		return p
	}
	menuSel, shopSel := menuSelectivity(&r), shopSelectivity(&r)
	if shopSel < menuSel*shopFirstRatio {
		p.Reasons = append(p.Reasons, "shop query first: its predicates are much more selective than the menu predicates")
		p.Steps = []Step{
			{Index: IndexShops, Phases: []Phase{PhaseQuery}, Carries: []Carry{CarryIDs}},
			{Index: IndexMenus, Phases: []Phase{PhaseQuery}, Restricted: true, Carries: carries},
			{Index: IndexShops, Phases: []Phase{PhaseDecision, PhaseFetch}, Restricted: true},
			menuFetch,
		}
		return p
	}
	p.Reasons = append(p.Reasons, "menu query first: the menu predicates are the more selective")
	p.Steps = []Step{
		{Index: IndexMenus, Phases: []Phase{PhaseQuery}, Carries: carries},
		{Index: IndexShops, Phases: []Phase{PhaseQuery, PhaseDecision, PhaseFetch}, Restricted: true},
		menuFetch,
	}
	return p
}

// PlanNested is the baseline: one request on the nested index does all three
// phases.
func PlanNested() Plan {
	return Plan{
		Steps:   []Step{{Index: IndexNested, Phases: []Phase{PhaseQuery, PhaseDecision, PhaseFetch}}},
		Reasons: []string{"nested layout: shop and menu fields are in one document"},
	}
}

// PlanHot is the hot layout: one request on the hot menu index does all
// three phases, the hot fields read from the baedal-hot table.
func PlanHot() Plan {
	return Plan{
		Steps:   []Step{{Index: IndexHotMenus, Phases: []Phase{PhaseQuery, PhaseDecision, PhaseFetch}}},
		Reasons: []string{"hot layout: cold shop fields and menus in one document, hot fields in the baedal-hot table"},
	}
}
