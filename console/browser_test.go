package console

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/browsertest"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/searcher"
)

// browserTestShops is the catalog size of the browser test: enough for a
// 치킨 search to fill a page and for sorts to reorder it.
const browserTestShops = 300

// hostileShopName and hostileMenuName are stored as data: the page must show
// them as text and never run them.
const (
	hostileShopName = `<b id="bold">굽네</b> 치킨`
	hostileMenuName = `<img src=x onerror="window.__xss=1">xsscheck 치킨`
)

// TestConsoleInChromium drives the console in a real headless Chromium
// against the real API on the real stack: a Korean search, a sort change,
// the nested comparison, a bad request's error, and the Ops view.
func TestConsoleInChromium(t *testing.T) {
	st := stacktest.Require(t)
	chromium := browsertest.RequireChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	fx := startConsoleServer(t, ctx, st)
	base := fx.base
	b := browsertest.New(t, chromium)
	b.ScreenshotOnFailure(t)

	// Open the console the way a person does: the root redirects to it.
	b.Do(t, "open the console", 30*time.Second, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("search-form")))
	if u := eval[string](t, b, `location.pathname`); u != "/console/" {
		t.Errorf("/ led to %q, want /console/", u)
	}
	nav := eval[[]string](t, b, `[...document.querySelectorAll('#nav a')].map(a => a.textContent)`)
	if !slices.Equal(nav, []string{"Search", "Ops"}) {
		t.Errorf("nav = %v, want [Search Ops]", nav)
	}

	// The page opens with a first search around the first preset (강남역):
	// every card shows its distance.
	b.WaitFor(t, "the first search around 강남역", shownQuery(url.Values{"lat": {"37.4979"}, "lon": {"127.0276"}}), 20*time.Second)
	if n := eval[int](t, b, `[...document.querySelectorAll('#results .shop-card')].filter(c => !c.querySelector('.distance')).length`); n != 0 {
		t.Errorf("%d cards around 강남역 show no distance", n)
	}
	b.Snapshot(t, "open")

	// Search anywhere in Seoul for 치킨, typed into the box.
	b.Do(t, "pick 'anywhere'", 10*time.Second, choose("location", ""))
	b.Do(t, "type 치킨 and search", 10*time.Second,
		chromedp.SendKeys(chromedp.ID("q"), "치킨"), chromedp.Click(chromedp.ID("search-button")))
	b.WaitFor(t, "results of 치킨", shownQuery(url.Values{"q": {"치킨"}}), 20*time.Second)
	relevance := shownShopIDs(t, b)
	wantRelevance := apiShopIDs(t, base, url.Values{"q": {"치킨"}})
	if len(relevance) == 0 || !slices.Equal(relevance, wantRelevance) {
		t.Fatalf("shown shops for 치킨 = %v, want the API's order %v", relevance, wantRelevance)
	}
	// Under relevance every card explains its place: each signal's points
	// and the total, highest first.
	totals := eval[[]float64](t, b, `[...document.querySelectorAll('#results .shop-card .rank')].map(e => Number(e.dataset.total))`)
	if len(totals) != len(relevance) || !slices.IsSortedFunc(totals, func(a, b float64) int { return cmp.Compare(b, a) }) {
		t.Errorf("relevance totals shown = %v, want one per card (%d), highest first", totals, len(relevance))
	}
	if signals := eval[[]string](t, b, `[...document.querySelectorAll('#results .shop-card:first-child .rank .signal')].map(e => e.dataset.signal)`); !slices.Equal(signals, []string{"open", "delivers", "text", "distance", "eta", "rating"}) {
		t.Errorf("signals shown = %v, want open, delivers, text, distance, eta, rating", signals)
	}
	if got := eval[string](t, b, `document.getElementById('q').value`); got != "치킨" {
		t.Errorf("search box holds %q after typing 치킨", got)
	}
	marks := eval[[]string](t, b, `[...document.querySelectorAll('#results .menu-name em')].map(e => e.textContent)`)
	if len(marks) == 0 || !slices.Contains(marks, "치킨") {
		t.Errorf("highlighted words in matched menus = %v, want 치킨 among them", marks)
	}
	b.Snapshot(t, "search")

	// Sort by delivery fee: the order changes, to the API's order.
	b.Do(t, "sort by delivery_fee", 10*time.Second, choose("sort", "delivery_fee"))
	b.WaitFor(t, "results sorted by delivery_fee", shownQuery(url.Values{"q": {"치킨"}, "sort": {"delivery_fee"}}), 20*time.Second)
	byFee := shownShopIDs(t, b)
	if want := apiShopIDs(t, base, url.Values{"q": {"치킨"}, "sort": {"delivery_fee"}}); !slices.Equal(byFee, want) {
		t.Errorf("shown shops by delivery_fee = %v, want the API's order %v", byFee, want)
	}
	if slices.Equal(byFee, relevance) {
		t.Errorf("sorting by delivery_fee did not change the order %v", byFee)
	}
	// The URL holds the request on screen, to be shared or reloaded.
	if got := hashParams(t, b); !slices.Equal(got, []string{"q=치킨", "sort=delivery_fee"}) {
		t.Errorf("location hash parameters = %v, want [q=치킨 sort=delivery_fee]", got)
	}
	fees := eval[[]string](t, b, `[...document.querySelectorAll('#results .shop-card .fee')].map(e => e.textContent)`)
	if !slices.IsSortedFunc(fees, func(a, b string) int { return won(t, a) - won(t, b) }) {
		t.Errorf("shown fees are not in ascending order: %v", fees)
	}

	// Live: a hot update of the first shop's delivery minutes shows up
	// without a new search, marked as changed.
	first := byFee[0]
	minutes := eval[string](t, b, fmt.Sprintf(`document.querySelector('.shop-card[data-shop-id="%d"] .minutes').textContent`, first))
	oldMinutes, err := strconv.Atoi(strings.TrimSuffix(minutes, " min"))
	if err != nil {
		t.Fatalf("minutes label %q", minutes)
	}
	newMinutes := oldMinutes%60 + 61 // differs from any generated estimate
	fx.setDeliveryMinutes(ctx, first, newMinutes)
	b.WaitFor(t, "the live update", fmt.Sprintf(`(() => {
		const m = document.querySelector('.shop-card[data-shop-id="%d"] .minutes');
		return m !== null && m.textContent === '%d min' && m.classList.contains('changed');
	})()`, first, newMinutes), 15*time.Second)

	// Compare with the nested baseline: both plans' steps side by side.
	b.Do(t, "toggle the nested comparison", 10*time.Second, chromedp.Click(chromedp.ID("compare")))
	b.WaitFor(t, "every layout's step timings", `document.querySelectorAll('#timings .plan').length === 3 && document.getElementById('results').dataset.state === 'done'`, 20*time.Second)
	compared := []string{"split", "nested"}
	if slices.Contains(fx.kinds, layout.Hot) {
		compared = append(compared, "hot")
	} else if got := eval[string](t, b, `document.querySelector('#timings .plan.unavailable[data-layout=hot] p').textContent`); !strings.Contains(got, "baedal-hot plugin") {
		t.Errorf("the unavailable hot layout shows %q, want the reason", got)
	}
	for _, l := range compared {
		names := eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll('#timings .plan[data-layout=%s] td.name')].map(e => e.textContent)`, l))
		want := apiStepNames(t, base, url.Values{"q": {"치킨"}, "sort": {"delivery_fee"}, "layout": {l}})
		if len(names) == 0 || !slices.Equal(names, want) {
			t.Errorf("%s steps shown = %v, want the API's explain steps %v", l, names, want)
		}
		for _, ms := range eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll('#timings .plan[data-layout=%s] td.took-ms')].map(e => e.textContent)`, l)) {
			if v, err := strconv.ParseFloat(ms, 64); err != nil || v < 0 {
				t.Errorf("%s step time %q is not a duration in ms", l, ms)
			}
		}
	}
	if got := eval[string](t, b, `document.getElementById('equivalence').className`); got != "same" {
		t.Errorf("the page says the layouts differ (%q); with no updates running they must agree", got)
	}
	b.Snapshot(t, "compare")

	// Stored text is shown as text, never run as HTML.
	b.Do(t, "search the hostile shop", 10*time.Second, clearInput("q"),
		chromedp.SendKeys(chromedp.ID("q"), "xsscheck"), chromedp.Click(chromedp.ID("search-button")))
	b.WaitFor(t, "results of xsscheck", shownQuery(url.Values{"q": {"xsscheck"}, "sort": {"delivery_fee"}}), 20*time.Second)
	if got := eval[string](t, b, `document.querySelector('#results .shop-name').textContent`); got != hostileShopName {
		t.Errorf("shop name shown as %q, want the literal text %q", got, hostileShopName)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#results img, #results b, #bold').length + (window.__xss ? 100 : 0)`); n != 0 {
		t.Errorf("stored markup became elements or ran (%d)", n)
	}
	if got := eval[string](t, b, `document.querySelector('#results .menu-name').textContent`); got != hostileMenuName {
		t.Errorf("menu name shown as %q, want the literal text %q", got, hostileMenuName)
	}
	if got := eval[[]string](t, b, `[...document.querySelectorAll('#results .menu-name em')].map(e => e.textContent)`); !slices.Contains(got, "xsscheck") {
		t.Errorf("highlights of xsscheck = %v, want xsscheck marked", got)
	}

	// A bad request: the API's problem is shown in words, naming the field.
	b.Do(t, "enter an impossible price range", 10*time.Second,
		clearInput("q"), chromedp.SendKeys(chromedp.ID("q"), "치킨"),
		chromedp.SendKeys(chromedp.ID("min_price"), "20000"), chromedp.SendKeys(chromedp.ID("max_price"), "1000"),
		chromedp.Click(chromedp.ID("search-button")))
	b.WaitFor(t, "the error", `document.getElementById('results').dataset.state === 'error'`, 20*time.Second)
	problem := eval[string](t, b, `document.getElementById('search-problem').innerText`)
	for _, want := range []string{"invalid request (400)", "20000 is greater than max_price 1000", "field: min_price"} {
		if !strings.Contains(problem, want) {
			t.Errorf("error shown = %q, want it to contain %q", problem, want)
		}
	}
	// A problem with allowed values, as the API really sends it, lists them.
	allowed := eval[string](t, b, `(async () => {
		const { getJSON, showProblem } = await import('/console/lib.js');
		const box = document.createElement('div');
		try { await getJSON('/v1/search?sort=cheapest'); } catch (err) { showProblem(box, err); }
		return box.textContent;
	})()`)
	if !strings.Contains(allowed, "field: sort") || !strings.Contains(allowed, "allowed: relevance, distance, delivery_minutes, rating, delivery_fee, eta") {
		t.Errorf("a problem with allowed values renders as %q", allowed)
	}
	b.Snapshot(t, "error")

	// A shared URL, opened in a new page load: the form is filled from it
	// and the search it names runs, with the comparison it asks for.
	shared := url.Values{"q": {"피자"}, "sort": {"rating"}, "lat": {"37.5563"}, "lon": {"126.9236"}, "open_now": {"true"}}
	b.Do(t, "open a shared search URL", 30*time.Second,
		chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/console/#search?"+shared.Encode()+"&compare=1"),
		chromedp.WaitVisible(chromedp.ID("search-form")))
	b.WaitFor(t, "the shared search", shownQuery(shared)+` && document.querySelectorAll('#timings .plan').length === 3`, 20*time.Second)
	if got, want := shownShopIDs(t, b), apiShopIDs(t, base, shared); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("shops shown for the shared URL = %v, want the API's %v", got, want)
	}
	form := eval[[]string](t, b, `[document.getElementById('q').value, document.getElementById('sort').value,
		document.getElementById('location').selectedOptions[0].textContent, String(document.getElementById('open_now').checked),
		String(document.getElementById('compare').checked)]`)
	if want := []string{"피자", "rating", "홍대입구 (37.5563, 126.9236)", "true", "true"}; !slices.Equal(form, want) {
		t.Errorf("form after opening the shared URL = %q, want %q", form, want)
	}
	// A location that is no preset is kept as it was shared; a new hash in
	// the same page (a pasted URL, the back button) runs its search.
	odd := url.Values{"q": {"치킨"}, "lat": {"37.51"}, "lon": {"127.01"}}
	b.Do(t, "open a shared URL with another location", 30*time.Second, chromedp.Navigate(base+"/console/#search?"+odd.Encode()))
	b.WaitFor(t, "the search at the shared location", shownQuery(odd), 20*time.Second)
	if got, want := shownShopIDs(t, b), apiShopIDs(t, base, odd); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("shops shown at the shared location = %v, want the API's %v", got, want)
	}
	b.Snapshot(t, "shared")

	// Ops: live charts from the server's metrics; searches made while the
	// page polls show up as search latency, a metric nobody reports as
	// "no data".
	b.Do(t, "open Ops", 10*time.Second, chromedp.Click(chromedp.CSS(`#nav a[data-view=ops]`)), chromedp.WaitVisible(chromedp.ID("panel-search")))
	b.WaitFor(t, "the first ops poll", `document.getElementById('panel-search').dataset.state !== undefined && document.getElementById('panel-lag').dataset.state === 'nodata'`, 10*time.Second)
	before := fx.searches()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		apiShopIDs(t, base, url.Values{"q": {"피자"}})
		if eval[bool](t, b, `[...document.querySelectorAll('#panel-search .legend strong')].some(s => s.textContent.endsWith(' ms'))`) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if fx.searches() == before {
		t.Error("the searches of this test were not counted by the searcher's histogram")
	}
	legend := eval[string](t, b, `document.querySelector('#panel-search .legend').textContent`)
	if !strings.Contains(legend, "split p50") || !strings.Contains(legend, " ms") {
		t.Errorf("search latency legend = %q, want a split p50 in ms", legend)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#panel-search svg path.series').length`); n == 0 {
		t.Error("the search latency chart has no line")
	}
	if got := eval[string](t, b, `document.getElementById('panel-lag').textContent`); !strings.Contains(got, "no data") {
		t.Errorf("the lag panel (no indexer worker runs) shows %q, want no data", got)
	}
	if got := eval[string](t, b, `document.getElementById('panel-event-rate').dataset.state`); got != "data" {
		t.Errorf("event rate panel state = %q, want data (the catalog load counted events)", got)
	}
	b.Snapshot(t, "ops")

	if errs := b.TakeJSErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
}

// consoleFixture is the API and console on a small catalog of this test.
type consoleFixture struct {
	base     string
	osc      *osapi.Client
	idx      layout.Config
	indexers []*indexer.Indexer
	reg      *prometheus.Registry
	t        *testing.T
	kinds    []layout.Kind // the layouts loaded (hot only where the cluster has its plugin)
}

// startConsoleServer loads a small catalog into every layout the cluster runs under a
// namespace of this test and serves the search API and the console on a
// loopback port.
func startConsoleServer(t *testing.T, ctx context.Context, st *localstack.State) *consoleFixture {
	t.Helper()
	osCfg := backend.Defaults().OpenSearch
	osCfg.URLs = st.OpenSearchURLs
	client, err := backend.OpenOpenSearch(osCfg)
	if err != nil {
		t.Fatal(err)
	}
	fx := &consoleFixture{osc: osapi.New(client), idx: layout.Defaults(), reg: prometheus.NewRegistry(), t: t}
	fx.idx.Prefix = stacktest.Namespace(t) + "_"
	kinds := stacktest.Layouts(t, fx.osc)
	fx.kinds = kinds
	t.Cleanup(func() {
		for _, k := range kinds {
			if err := fx.idx.DeleteIndices(context.Background(), fx.osc, k); err != nil {
				t.Logf("delete %s indices: %v", k, err)
			}
		}
	})

	gen := catalog.NewGenerator(8)
	events := make([]catalog.Event, 0, browserTestShops+1)
	for i := range browserTestShops {
		events = append(events, gen.Shop(i).UpsertEvent())
	}
	hostile := gen.Shop(browserTestShops)
	hostile.Shop.Name = hostileShopName
	hostile.Menus[0].Name = hostileMenuName
	events = append(events, hostile.UpsertEvent())

	icfg := indexer.Defaults()
	icfg.Layout = fx.idx
	for _, k := range kinds {
		if err := fx.idx.EnsureIndices(ctx, fx.osc, k); err != nil {
			t.Fatal(err)
		}
		ix, err := indexer.New(icfg, k, fx.osc, nil, fx.reg)
		if err != nil {
			t.Fatal(err)
		}
		fx.indexers = append(fx.indexers, ix)
	}
	fx.apply(ctx, events)

	cfg := api.Defaults()
	cfg.Addr = "127.0.0.1:0"
	srv := api.New(cfg, nil, fx.reg)
	srch := searcher.New(fx.osc, fx.idx, searcher.Defaults(), fx.reg)
	if !slices.Contains(kinds, layout.Hot) {
		srch.SetUnavailable(layout.Hot, "this test's cluster lacks the baedal-hot plugin")
	}
	searcher.RegisterRoutes(srv, srch)
	RegisterRoutes(srv, Deps{Search: true, Gatherer: fx.reg, DefaultLayout: srch.DefaultKind})
	srvCtx, stop := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- srv.Run(srvCtx, func(addr string) { addrc <- addr }) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	select {
	case addr := <-addrc:
		fx.base = "http://" + addr
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}
	return fx
}

// apply indexes events into every layout and makes them searchable.
func (fx *consoleFixture) apply(ctx context.Context, events []catalog.Event) {
	fx.t.Helper()
	for _, ix := range fx.indexers {
		if _, err := ix.Apply(ctx, events); err != nil {
			fx.t.Fatalf("apply %d events to %s: %v", len(events), ix.Kind(), err)
		}
		for _, alias := range fx.idx.Aliases(ix.Kind()) {
			if err := fx.osc.Do(ctx, http.MethodPost, "/"+alias+"/_refresh", nil, nil); err != nil {
				fx.t.Fatal(err)
			}
		}
	}
}

// setDeliveryMinutes applies a hot update, as the simulator does.
func (fx *consoleFixture) setDeliveryMinutes(ctx context.Context, shopID int64, minutes int) {
	fx.t.Helper()
	fx.apply(ctx, []catalog.Event{catalog.ShopUpsertEvent(shopID, 2, &catalog.ShopFields{DeliveryMinutes: &minutes})})
}

// searches is the number of searches the searcher's histogram counted.
func (fx *consoleFixture) searches() uint64 {
	snap, err := Snapshot(fx.reg, "baedal_search_seconds")
	if err != nil {
		fx.t.Fatal(err)
	}
	var n uint64
	for _, s := range snap.Metrics["baedal_search_seconds"].Series {
		n += s.Count
	}
	return n
}

// shownQuery is a predicate: the results on screen are a finished search
// with exactly these parameters.
func shownQuery(want url.Values) string {
	return fmt.Sprintf(`(() => {
		const r = document.getElementById('results');
		if (r.dataset.state !== 'done' || r.dataset.query === undefined) return false;
		const got = new URLSearchParams(r.dataset.query), want = new URLSearchParams(%q);
		got.sort();
		want.sort();
		return got.toString() === want.toString();
	})()`, want.Encode())
}

func shownShopIDs(t *testing.T, b *browsertest.Browser) []int64 {
	t.Helper()
	ids := eval[[]string](t, b, `[...document.querySelectorAll('#results .shop-card')].map(c => c.dataset.shopId)`)
	out := make([]int64, len(ids))
	for i, s := range ids {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("card %d has shop id %q", i, s)
		}
		out[i] = n
	}
	return out
}

func apiSearch(t *testing.T, base string, params url.Values) searcher.Response {
	t.Helper()
	resp, err := http.Get(base + "/v1/search?" + params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out searcher.Response
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("API search %s: status %d", params.Encode(), resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func apiShopIDs(t *testing.T, base string, params url.Values) []int64 {
	t.Helper()
	var ids []int64
	for _, s := range apiSearch(t, base, params).Shops {
		ids = append(ids, s.ID)
	}
	return ids
}

func apiStepNames(t *testing.T, base string, params url.Values) []string {
	t.Helper()
	params.Set("explain", "true")
	resp := apiSearch(t, base, params)
	if resp.Explain == nil {
		t.Fatalf("API search %s has no explain", params.Encode())
	}
	var names []string
	for _, s := range resp.Explain.Steps {
		names = append(names, s.Name)
	}
	return names
}

// won reads the amount of a "배달비 ₩3,000" label.
func won(t *testing.T, label string) int {
	_, amount, ok := strings.Cut(label, "₩")
	n, err := strconv.Atoi(strings.ReplaceAll(amount, ",", ""))
	if !ok || err != nil {
		t.Fatalf("fee label %q has no amount", label)
	}
	return n
}

// choose selects value in the select element id, as a person picking an
// option does (the change event fires).
func choose(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const s = document.getElementById(%q);
		s.value = %q;
		if (s.value !== %q) throw new Error('select #' + s.id + ' has no option ' + %q);
		s.dispatchEvent(new Event('change'));
	})()`, id, value, value, value))
}

// clearInput empties the text input id (chromedp.Clear empties only the
// value attribute, not what the input holds once typed into).
func clearInput(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).value = ''`, id))
}

// eval evaluates a JavaScript expression in b's page into T.
func eval[T any](t *testing.T, b *browsertest.Browser, expr string) T {
	t.Helper()
	return browsertest.Eval[T](t, b, expr)
}

// hashParams is the page's location hash (#search?…) as sorted, decoded
// key=value pairs.
func hashParams(t *testing.T, b *browsertest.Browser) []string {
	t.Helper()
	return eval[[]string](t, b, `(() => {
		const at = location.hash.indexOf('?');
		if (!location.hash.startsWith('#search') || at < 0) return [];
		return [...new URLSearchParams(location.hash.slice(at + 1))].map(([k, v]) => k + '=' + v).sort();
	})()`)
}
