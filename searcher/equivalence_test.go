package searcher

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// equivalenceShops is just above the default candidate page (10,000), so
// that a search without text can page past a full page of real size; most
// requests run with a shrunk candidate page so that paging (point in time +
// search_after) is exercised by every kind of request.
const (
	equivalenceShops   = 10_200
	equivalenceUpdates = 6000
	equivalenceQueries = 500
	// perPlanShape is the least number of requests of each plan shape
	// query.PlanSteps can emit.
	perPlanShape = 40
)

// regressionSeeds are request seeds that once produced different results on
// the two layouts; they run first, every time.
var regressionSeeds = []uint64{
	209, 256, // no filter at all: the nested baseline dropped shops without menus
}

// TestSplitEqualsNested loads one generated catalog, changed by a realistic
// event stream, into both layouts and checks that random searches return the
// same shops in the same order, with the same totals and matched menus.
func TestSplitEqualsNested(t *testing.T) {
	st := stacktest.Require(t)
	osc, idx := openIndex(t, st.OpenSearchURLs)
	states := generateStates(equivalenceShops, equivalenceUpdates)
	if !slices.ContainsFunc(slices.Collect(maps.Values(states)), func(s *catalog.ShopState) bool { return s.Deleted }) {
		t.Fatal("the generated states have no deleted shop: no delete tombstone is tested")
	}
	kinds := stacktest.Layouts(t, osc)
	loadLayouts(t, osc, idx, kinds, states)
	cfg := Defaults()
	cfg.CandidatePage = 250
	s := newSearcher(osc, idx, cfg, kinds)

	seeds := slices.Clone(regressionSeeds)
	for i := range equivalenceQueries {
		seeds = append(seeds, uint64(i))
	}
	seeds = append(seeds, seedsOfEveryPlanShape(equivalenceQueries, perPlanShape)...)
	only := os.Getenv("EQUIV_SEED")
	if only != "" {
		n, _ := strconv.Atoi(only)
		seeds = []uint64{uint64(n)}
	}
	mismatches, nonEmpty, paged := 0, 0, 0
	shapes, completed := make(map[string]int), make(map[string]int)
	for _, seed := range seeds {
		req := randomRequest(seed)
		nested, split, diff := searchBoth(t, s, req)
		if diff != "" {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("seed %d (%s): %s", seed, req.Encode().Encode(), diff)
			}
		}
		if len(nested.Shops) > 0 {
			nonEmpty++
		}
		planned := plannedShape(req)
		shapes[planned]++
		if stepNames(split) == planned {
			completed[planned]++ // a step that finds no candidates ends the search early
		}
		for _, step := range split.Explain.Steps {
			if step.Requests > 1 && step.Candidates > cfg.CandidatePage {
				paged++
				break
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d of %d requests differ between layouts; add failing seeds to regressionSeeds", mismatches, len(seeds))
	}
	// The random requests must exercise what they claim to.
	if nonEmpty < len(seeds)/3 {
		t.Errorf("only %d of %d requests returned shops: the generator is too selective to test anything", nonEmpty, len(seeds))
	}
	if paged == 0 {
		t.Errorf("no request paged past one candidate page: the PIT path is untested")
	}
	if only == "" {
		for _, shape := range planShapes() {
			if shapes[shape] < perPlanShape || completed[shape] < perPlanShape/2 {
				t.Errorf("plan %s: %d requests, %d ran every step; want at least %d and %d", shape, shapes[shape], completed[shape], perPlanShape, perPlanShape/2)
			}
		}
	}
	t.Logf("%d requests equal, %d non-empty, %d paged through a point in time, plans (requests, all steps run): %v %v", len(seeds), nonEmpty, paged, shapes, completed)

	// A search whose candidates exceed a real candidate page (10,000):
	// every shop with menus is a candidate of an eta sort without text.
	full := newSearcher(osc, idx, Defaults(), kinds)
	for _, req := range []query.Request{
		{Sort: query.SortETA, Page: 1, Size: 20, Explain: true},
		{Sort: query.SortETA, Page: 300, Size: 20, Explain: true},
		{Sort: query.SortETA, Page: 1, Size: 10, MaxTotalFee: ptr(3000), Explain: true},
		// max_total_fee without text: its filter meets every candidate,
		// and once answered 500 on split (the script read a tombstone).
		{Sort: query.SortRelevance, Page: 1, Size: 1, MaxTotalFee: ptr(4000), Explain: true},
	} {
		_, split, diff := searchBoth(t, full, req)
		if diff != "" {
			t.Errorf("%s with candidate pages of %d: %s", req.Encode().Encode(), Defaults().CandidatePage, diff)
		}
		if step := split.Explain.Steps[0]; step.Candidates <= Defaults().CandidatePage || step.Requests < 2 {
			t.Errorf("%s: first step had %d candidates in %d requests, want more than %d in several",
				req.Encode().Encode(), step.Candidates, step.Requests, Defaults().CandidatePage)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// searchBoth runs req on every layout the cluster runs and returns the
// nested and split responses and the first difference of a layout from
// nested ("" when all are equal).
func searchBoth(t *testing.T, s *Searcher, req query.Request) (nested, split *Response, diff string) {
	t.Helper()
	ctx := context.Background()
	nested, err := s.Search(ctx, req, layout.Nested)
	if err != nil {
		t.Fatalf("nested %s: %v", req.Encode().Encode(), err)
	}
	for _, k := range []layout.Kind{layout.Split, layout.Hot} {
		if s.Unavailable(k) != "" {
			continue
		}
		other, err := s.Search(ctx, req, k)
		if err != nil {
			t.Fatalf("%s %s: %v", k, req.Encode().Encode(), err)
		}
		if k == layout.Split {
			split = other
		}
		if d := compare(nested, other); d != "" && diff == "" {
			diff = string(k) + ": " + d
		}
	}
	return nested, split, diff
}

// newSearcher returns a searcher of the layouts in kinds (the others are
// marked unavailable).
func newSearcher(osc *osapi.Client, idx layout.Config, cfg Config, kinds []layout.Kind) *Searcher {
	s := New(osc, idx, cfg, nil)
	for _, k := range layout.Kinds() {
		if !slices.Contains(kinds, k) {
			s.SetUnavailable(k, "not loaded by this test")
		}
	}
	return s
}

// stepNames is the plan a split search ran, as "a → b → c".
func stepNames(r *Response) string {
	var names []string
	for _, st := range r.Explain.Steps {
		names = append(names, st.Name)
	}
	return strings.Join(names, " → ")
}

// planShapes returns every plan query.PlanSteps can emit, as stepNames
// prints them, from requests built to reach each branch of the planner.
func planShapes() []string {
	lat, lon := 37.5, 127.0
	shopFirst := query.Request{Sort: query.SortETA, OpenNow: true, MaxDeliveryFee: ptr(2000), MinRating: ptr(4.0)}
	menuFirst := query.Request{Q: "치킨", Sort: query.SortRelevance}
	shopsOnly := query.Request{Lat: &lat, Lon: &lon, Sort: query.SortDistance}
	return []string{plannedShape(shopsOnly), plannedShape(menuFirst), plannedShape(shopFirst)}
}

// plannedShape is the plan query.PlanSteps makes for r, as stepNames prints it.
func plannedShape(r query.Request) string {
	var names []string
	for _, st := range query.PlanSteps(r).Steps {
		names = append(names, st.Name())
	}
	return strings.Join(names, " → ")
}

// seedsOfEveryPlanShape returns, after the first skip seeds, the first seeds
// whose random request plans to each shape of planShapes, n of each: the
// shop-first plan needs several selective shop filters and no text, which a
// random request draws only about once in 2,000.
func seedsOfEveryPlanShape(skip, n int) []uint64 {
	need := make(map[string]int)
	for _, shape := range planShapes() {
		need[shape] = n
	}
	var out []uint64
	for seed := uint64(skip); len(need) > 0 && seed < uint64(skip)+5_000_000; seed++ {
		shape := plannedShape(randomRequest(seed))
		if need[shape] > 0 {
			out = append(out, seed)
			if need[shape]--; need[shape] == 0 {
				delete(need, shape)
			}
		}
	}
	return out
}

// compare returns "" when the two responses agree on totals, order, shop
// fields and matched menus.
func compare(a, b *Response) string {
	if a.Total != b.Total {
		return fmt.Sprintf("total nested %d, split %d", a.Total, b.Total)
	}
	if len(a.Shops) != len(b.Shops) {
		return fmt.Sprintf("page length nested %d, split %d", len(a.Shops), len(b.Shops))
	}
	for i := range a.Shops {
		x, y := a.Shops[i], b.Shops[i]
		if x.ID != y.ID {
			return fmt.Sprintf("position %d: nested shop %d, split shop %d", i, x.ID, y.ID)
		}
		if x.Version != y.Version {
			return fmt.Sprintf("shop %d: version nested %d, split %d", x.ID, x.Version, y.Version)
		}
		if !reflect.DeepEqual(x.Shop, y.Shop) {
			return fmt.Sprintf("shop %d: fields differ: %+v vs %+v", x.ID, x.Shop, y.Shop)
		}
		if !slices.EqualFunc(x.MatchedMenus, y.MatchedMenus, func(m, n MatchedMenu) bool {
			return m.ID == n.ID && m.Price == n.Price && maps.EqualFunc(m.Highlight, n.Highlight, slices.Equal)
		}) {
			return fmt.Sprintf("shop %d: matched menus differ: %v vs %v", x.ID, menuIDs(x.MatchedMenus), menuIDs(y.MatchedMenus))
		}
		if (x.ETAMinutes == nil) != (y.ETAMinutes == nil) || (x.ETAMinutes != nil && *x.ETAMinutes != *y.ETAMinutes) {
			return fmt.Sprintf("shop %d: eta differs", x.ID)
		}
		if (x.Delivers == nil) != (y.Delivers == nil) || (x.Delivers != nil && *x.Delivers != *y.Delivers) {
			return fmt.Sprintf("shop %d: delivers mark differs", x.ID)
		}
	}
	return ""
}

func menuIDs(ms []MatchedMenu) []int64 {
	var out []int64
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// Words that match many shops, a few, or none, and mixed text.
var queryWords = []string{"치킨", "피자", "떡볶이", "페퍼로니", "양념치킨", "짜장면", "마라탕", "초밥", "족발", "아메리카노",
	"치즈", "김치찌개", "돈까스", "떡볶", "불고기 피자", "콜라", "없는메뉴", "pizza", "세트", "1인분"}

var seoulPoints = [][2]float64{{37.4979, 127.0276}, {37.5563, 126.9236}, {37.5172, 127.0473}, {37.5700, 126.9830}, {37.6542, 127.0568}, {37.4837, 126.9300}}

// randomRequest draws a request covering every filter and sort, deep pages
// and ties (sorts on coarse fields such as delivery_fee tie often).
func randomRequest(seed uint64) query.Request {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	r := query.Request{Sort: query.SortRelevance, Page: 1, Size: 20, Explain: true}
	if rng.IntN(10) < 8 {
		r.Q = queryWords[rng.IntN(len(queryWords))]
	}
	if rng.IntN(10) < 7 {
		p := seoulPoints[rng.IntN(len(seoulPoints))]
		lat, lon := p[0]+rng.NormFloat64()*0.01, p[1]+rng.NormFloat64()*0.01
		r.Lat, r.Lon = &lat, &lon
	}
	r.OpenNow = rng.IntN(2) == 0
	if rng.IntN(5) == 0 {
		cats := catalog.Categories()
		r.Category = cats[rng.IntN(len(cats))]
	}
	intp := func(n int) *int { return &n }
	if rng.IntN(4) == 0 {
		r.MaxDeliveryFee = intp(500 * rng.IntN(8))
	}
	if rng.IntN(4) == 0 {
		m := 3.5 + float64(rng.IntN(12))/10
		r.MinRating = &m
	}
	if rng.IntN(4) == 0 {
		r.MinPrice = intp(1000 * rng.IntN(15))
	}
	if rng.IntN(4) == 0 {
		r.MaxPrice = intp(10000 + 1000*rng.IntN(30))
	}
	if rng.IntN(4) == 0 {
		r.MaxTotalFee = intp(500 * rng.IntN(10))
	}
	sorts := query.Sorts()
	r.Sort = query.Sort(sorts[rng.IntN(len(sorts))])
	if r.Sort == query.SortDistance && !r.HasLocation() {
		r.Sort = query.SortRating
	}
	r.Size = []int{1, 5, 20, 50, 100}[rng.IntN(5)]
	if rng.IntN(5) == 0 {
		r.Page = 1 + rng.IntN(40)
		if r.Page*r.Size > query.MaxWindow {
			r.Page = 1
		}
	}
	return r
}

// generateStates builds a catalog and applies a realistic event stream to it,
// so the indices hold changed documents with versions above 1.
func generateStates(shops, updates int) map[int64]*catalog.ShopState {
	gen := catalog.NewGenerator(42)
	states := map[int64]*catalog.ShopState{}
	for i := range shops {
		s := gen.Shop(i)
		states[s.Shop.ID] = &s
	}
	// Shops without menus (after menu deletes, or created without any):
	// they match searches without menu predicates, and no other.
	for i := shops; i < shops+3; i++ {
		s := gen.Shop(i % shops)
		s.Shop.ID, s.Menus = catalog.ShopID(shops+i), nil
		states[s.Shop.ID] = &s
	}
	stream := catalog.NewEventStream(42, shops)
	for range updates {
		ev := stream.Next()
		id := ev.AggregateID()
		st, ok := states[id]
		if !ok {
			st = &catalog.ShopState{}
			states[id] = st
		}
		_, _ = st.Apply(ev) // events the stream makes for unknown states are skipped
	}
	return states
}

func openIndex(t *testing.T, urls []string) (*osapi.Client, layout.Config) {
	t.Helper()
	cfg := backend.Defaults()
	cfg.OpenSearch.URLs = urls
	clients, err := backend.OpenOpenSearch(cfg.OpenSearch)
	if err != nil {
		t.Fatal(err)
	}
	idx := layout.Defaults()
	idx.Prefix = stacktest.Namespace(t) + "_"
	osc := osapi.New(clients)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range layout.Kinds() {
			_ = idx.DeleteIndices(ctx, osc, k)
		}
	})
	return osc, idx
}

// writeDocs indexes every state directly (the indexer is tested on its own).
// loadLayouts creates the indices of every layout in kinds and writes
// states into each.
func loadLayouts(t *testing.T, osc *osapi.Client, idx layout.Config, kinds []layout.Kind, states map[int64]*catalog.ShopState) {
	t.Helper()
	for _, k := range kinds {
		if err := idx.EnsureIndices(context.Background(), osc, k); err != nil {
			t.Fatal(err)
		}
		writeDocs(t, osc, idx, k, states)
	}
}

func writeDocs(t *testing.T, osc *osapi.Client, idx layout.Config, k layout.Kind, states map[int64]*catalog.ShopState) {
	t.Helper()
	var buf bytes.Buffer
	flush := func() {
		if buf.Len() == 0 {
			return
		}
		var out struct {
			Errors bool `json:"errors"`
			Items  []map[string]struct {
				Error json.RawMessage `json:"error"`
			} `json:"items"`
		}
		if err := osc.DoContentType(context.Background(), http.MethodPost, "/_bulk", "application/x-ndjson", buf.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if out.Errors {
			for _, it := range out.Items {
				for _, r := range it {
					if r.Error != nil {
						t.Fatalf("bulk item failed: %s", r.Error)
					}
				}
			}
		}
		buf.Reset()
	}
	add := func(alias string, id int64, doc any) {
		meta, _ := json.Marshal(map[string]any{"index": map[string]any{"_index": alias, "_id": strconv.FormatInt(id, 10)}})
		src, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(meta)
		buf.WriteByte('\n')
		buf.Write(src)
		buf.WriteByte('\n')
	}
	// A deleted shop leaves a delete tombstone in the index, as the
	// indexer's deletes do: a Lucene document with none of the shop's
	// fields, which some bulk scorers show to a script before they check
	// that it is live. The hot layout keeps a head tombstone, as its
	// indexer does, which the plugin's table reads.
	deleteAfterIndexing := func(alias string, id int64) {
		add(alias, id, map[string]any{"id": id})
		meta, _ := json.Marshal(map[string]any{"delete": map[string]any{"_index": alias, "_id": strconv.FormatInt(id, 10)}})
		buf.Write(meta)
		buf.WriteByte('\n')
	}
	n := 0
	for id, st := range states {
		switch {
		case st.Deleted && k == layout.Hot:
			add(idx.Alias(layout.RoleHotShops), id, layout.HotHeadTombstone{ID: id, Version: st.Version, Deleted: true, DeletedAt: "2026-11-28T00:00:00Z"})
		case st.Deleted:
			for _, alias := range idx.Aliases(k) {
				deleteAfterIndexing(alias, id)
			}
		}
		if st.Deleted || st.Version == 0 {
			continue
		}
		switch k {
		case layout.Nested:
			add(idx.Alias(layout.RoleNested), id, layout.BuildNested(st, st.Version))
		case layout.Hot:
			add(idx.Alias(layout.RoleHotShops), id, layout.BuildHotHead(st, st.Version))
			add(idx.Alias(layout.RoleHotMenus), id, layout.BuildHotMenus(st, st.Version))
		default:
			add(idx.Alias(layout.RoleShops), id, layout.BuildShop(st, st.Version))
			add(idx.Alias(layout.RoleMenus), id, layout.BuildMenus(st, st.Version))
		}
		if n++; n%300 == 0 {
			flush()
		}
	}
	flush()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, alias := range idx.Aliases(k) {
		if err := osc.Do(ctx, http.MethodPost, "/"+alias+"/_refresh", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}
