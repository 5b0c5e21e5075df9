package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/browsertest"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/linkstore"
)

// TestConsoleViewsInChromium drives the console's views of the other
// systems in a real headless Chromium against the whole server on the real
// stack: Feed (post as a user, the fan-out reaching the followers, the feed
// under each strategy side by side, a celebrity's post pulled), Replicas (live C3 statistics of a Redis read replica and of two
// OpenSearch endpoints, one dead) and Links (a click created and resolved,
// the migration switched through its modes with a shadow-read difference,
// the memory report measured in Redis). The admin token is typed into the
// page and must stay in its memory.
func TestConsoleViewsInChromium(t *testing.T) {
	st := stacktest.Require(t)
	chromium := browsertest.RequireChromium(t)
	ns := stacktest.Namespace(t)
	cfg := fullServerConfig(t, st)
	cfg.Workers = true                                                                  // the feed's fan-out
	cfg.Feed.CelebrityThreshold = 3                                                     // a celebrity of three followers
	cfg.Backends.OpenSearch.URLs = []string{"http://127.0.0.1:1", st.OpenSearchURLs[0]} // a dead endpoint first
	cfg.Backends.Redis.ReplicaAddrs = st.RedisReplicaAddrs
	if len(cfg.Backends.Redis.ReplicaAddrs) == 0 {
		// A stack without replicas: the primary answers the replica reads.
		cfg.Backends.Redis.ReplicaAddrs = []string{st.RedisAddr}
	}
	cfg.Links.Migrate = true
	addr := serve(t, cfg)
	base := "http://" + addr
	api := &adminClient{t: t, base: base, token: cfg.API.AdminToken, httpc: validatingClient(t)}

	b := browsertest.New(t, chromium)
	b.ScreenshotOnFailure(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("page errors: %v", b.TakeJSErrors())
		}
	})

	// Replicas: nothing is asked before the token is entered.
	b.Do(t, "open the Replicas view", 30*time.Second, chromedp.Navigate(base+"/console/#replicas"), chromedp.WaitVisible(chromedp.ID("replicas-token")))
	nav := browsertest.Eval[[]string](t, b, `[...document.querySelectorAll('#nav a')].map(a => a.textContent)`)
	if want := []string{"Search", "Feed", "Links", "Reindex", "Replicas", "Ops"}; !slices.Equal(nav, want) {
		t.Errorf("nav = %v, want %v", nav, want)
	}
	if got := browsertest.Eval[string](t, b, `document.getElementById('replicas-redis').dataset.state || ''`); got != "" {
		t.Errorf("the replicas were shown (%q) before a token was entered", got)
	}

	// A wrong token: the 401 is shown in words.
	enterToken(t, b, "not-the-token")
	b.WaitFor(t, "the 401", `document.getElementById('replicas-problem').textContent.includes('(401)')`, 10*time.Second)

	enterToken(t, b, cfg.API.AdminToken)
	b.WaitFor(t, "both replica tables", `document.getElementById('replicas-redis').dataset.state === 'data' && document.getElementById('replicas-opensearch').dataset.state === 'data'`, 15*time.Second)
	var redisView struct {
		Policy   string                  `json:"policy"`
		Replicas []struct{ Addr string } `json:"replicas"`
	}
	api.getJSON("/v1/admin/replicas", &redisView)
	var osView struct {
		Endpoints []struct {
			Host   string
			Chosen uint64
		} `json:"endpoints"`
	}
	api.getJSON("/v1/admin/opensearch-endpoints", &osView)
	var wantRedis, wantOS []string
	for _, r := range redisView.Replicas {
		wantRedis = append(wantRedis, r.Addr)
	}
	for _, e := range osView.Endpoints {
		wantOS = append(wantOS, e.Host)
	}
	if got := shownNames(t, b, "replicas-redis"); len(got) == 0 || !slices.Equal(got, wantRedis) {
		t.Errorf("Redis replicas shown = %v, want the API's %v", got, wantRedis)
	}
	if got := shownNames(t, b, "replicas-opensearch"); len(got) != 2 || !slices.Equal(got, wantOS) {
		t.Errorf("OpenSearch endpoints shown = %v, want the API's two %v", got, wantOS)
	}

	// Live: searches and feed reads made now show up in the counts without
	// a reload, with a rank and an EWMA response time once answered.
	live := osView.Endpoints[1].Host
	before := shownCell(t, b, "replicas-opensearch", live, "chosen")
	var user struct{ ID int64 }
	api.doJSON("POST", "/v1/users", fmt.Sprintf(`{"username":"c%s","profilePic":"https://img.example/c.png"}`, ns[len(ns)-8:]), http.StatusCreated, &user)
	redisBefore := shownCell(t, b, "replicas-redis", wantRedis[0], "chosen")
	for i := 0; i < 5; i++ {
		api.doJSON("GET", "/v1/search?q=%ED%94%BC%EC%9E%90", "", 0, nil) // 200, or 503 while the indices are created
		api.doJSON("GET", fmt.Sprintf("/v1/users/%d/feed", user.ID), "", http.StatusOK, nil)
	}
	b.WaitFor(t, "the new requests in the live tables", fmt.Sprintf(`(() => {
		const cell = (id, name, cls) => Number(document.querySelector('#' + id + ' tr[data-name="' + name + '"] td.' + cls)?.textContent);
		return cell('replicas-opensearch', %q, 'chosen') >= %d && cell('replicas-redis', %q, 'chosen') >= %d;
	})()`, live, before+5, wantRedis[0], redisBefore+5), 10*time.Second)
	for _, cls := range []string{"rank", "ewma"} {
		v, err := strconv.ParseFloat(shownText(t, b, "replicas-redis", wantRedis[0], cls), 64)
		if err != nil || v < 0 {
			t.Errorf("Redis replica %s shown as %q, want a number ≥ 0", cls, shownText(t, b, "replicas-redis", wantRedis[0], cls))
		}
	}
	if n := browsertest.Eval[int](t, b, `document.querySelectorAll('#replicas-opensearch tr.best').length`); n != 1 {
		t.Errorf("%d OpenSearch endpoints marked best, want 1", n)
	}
	if got := shownText(t, b, "replicas-opensearch", "127.0.0.1:1", "failures"); got == "0" || got == "" {
		t.Errorf("the dead endpoint shows %q failures, want some", got)
	}
	b.Snapshot(t, "replicas")
	checkNoNullText(t, b)

	// Links: create a click and resolve it twice.
	b.Do(t, "open Links", 10*time.Second, chromedp.Click(chromedp.CSS(`#nav a[data-view=links]`)), chromedp.WaitVisible(chromedp.ID("create-click")))
	b.Do(t, "create a click", 10*time.Second, chromedp.Click(chromedp.ID("create-click")))
	b.WaitFor(t, "the created click", `document.getElementById('click-result').dataset.clickId !== undefined`, 10*time.Second)
	clickID := browsertest.Eval[string](t, b, `document.getElementById('click-result').dataset.clickId`)
	var stored struct {
		Record struct {
			DeepLinkURL string `json:"deep_link_url"`
		} `json:"record"`
		Consumed bool `json:"consumed"`
	}
	api.getJSON("/v1/clicks/"+clickID, &stored)
	if stored.Record.DeepLinkURL != "baedal://shop/1" || stored.Consumed {
		t.Errorf("click %s as stored: %+v, want deep link baedal://shop/1, not consumed", clickID, stored)
	}
	b.Do(t, "resolve it", 10*time.Second, chromedp.Click(chromedp.ID("resolve-click")))
	b.WaitFor(t, "the first resolution", `document.getElementById('resolve-result').dataset.state === 'first'`, 10*time.Second)
	if got := browsertest.Eval[string](t, b, `document.querySelector('#resolve-result .deep-link').textContent`); got != "baedal://shop/1" {
		t.Errorf("resolved deep link shown = %q", got)
	}
	api.getJSON("/v1/clicks/"+clickID, &stored)
	if !stored.Consumed {
		t.Error("the click resolved in the page is not consumed in the store")
	}
	b.Do(t, "resolve it again", 10*time.Second, chromedp.Click(chromedp.ID("resolve-click")))
	b.WaitFor(t, "the repeated resolution", `document.getElementById('resolve-result').dataset.state === 'again'`, 10*time.Second)
	// An id that is not a UUID: the API's problem, naming the field.
	b.Do(t, "resolve a bad id", 10*time.Second, chromedp.Evaluate[chromedp.Void](`document.getElementById('click-id').value = 'nope'`), chromedp.Click(chromedp.ID("resolve-click")))
	b.WaitFor(t, "the bad id's problem", `document.getElementById('resolve-result').dataset.state === 'error'`, 10*time.Second)
	if got := browsertest.Eval[string](t, b, `document.getElementById('links-problem').textContent`); !strings.Contains(got, "(400)") || !strings.Contains(got, "field: id") {
		t.Errorf("bad id problem shown = %q, want a 400 naming the field id", got)
	}

	// Migration: old-only → dual-write → shadow-read, each switch made in
	// the page and seen by the API.
	b.WaitFor(t, "the migration mode", `document.getElementById('links-mode').textContent === 'old-only'`, 10*time.Second)
	for _, mode := range []string{"dual-write", "shadow-read"} {
		b.Do(t, "switch to "+mode, 10*time.Second, chromedp.Click(chromedp.CSS(`#links-next button[data-mode="`+mode+`"]`)))
		b.WaitFor(t, "mode "+mode, fmt.Sprintf(`document.getElementById('links-mode').textContent === %q`, mode), 10*time.Second)
		var state struct{ Mode string }
		api.getJSON("/v1/admin/links/migration", &state)
		if state.Mode != mode {
			t.Fatalf("the page switched to %s, the API says %s", mode, state.Mode)
		}
	}
	// A record in the old store only: reading it in shadow-read compares
	// it with the new store, which lacks it; the page shows the difference.
	oldOnly := writeOldOnlyClick(t, st.RedisAddr, cfg.Links.Old.Namespace)
	api.doJSON("GET", "/v1/clicks/"+oldOnly, "", http.StatusOK, nil)
	b.WaitFor(t, "the shadow-read difference", `Number(document.querySelector('#links-report [data-figure="missing in new"] strong').textContent) >= 1`, 15*time.Second)
	var report struct {
		Report struct {
			MissingInNew int64 `json:"missing_in_new"`
		} `json:"report"`
	}
	api.getJSON("/v1/admin/links/migration", &report)
	if got := browsertest.Eval[string](t, b, `document.querySelector('#links-report [data-figure="missing in new"] strong').textContent`); got != strconv.FormatInt(report.Report.MissingInNew, 10) {
		t.Errorf("missing in new shown = %s, the API's report says %d", got, report.Report.MissingInNew)
	}

	// Memory: every format measured in Redis, and the scratch keys gone.
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisAddr})
	defer rdb.Close()
	keysBefore := countKeys(t, rdb, cfg.Links.New.Namespace)
	b.Do(t, "measure memory", 10*time.Second, chromedp.Evaluate[chromedp.Void](`document.getElementById('memory-records').value = '50'`), chromedp.Click(chromedp.ID("measure-memory")))
	b.WaitFor(t, "the memory report", `document.getElementById('links-memory').dataset.state === 'data'`, 30*time.Second)
	codecs := browsertest.Eval[[]string](t, b, `[...document.querySelectorAll('#links-memory tbody tr')].map(r => r.dataset.codec)`)
	if !slices.Equal(codecs, linkstore.CodecNames()) {
		t.Errorf("formats shown = %v, want every codec %v", codecs, linkstore.CodecNames())
	}
	usage := func(codec string) float64 {
		s := browsertest.Eval[string](t, b, fmt.Sprintf(`document.querySelector('#links-memory tr[data-codec=%q] td.usage')?.textContent || ''`, codec))
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			t.Fatalf("MEMORY USAGE of %s shown as %q", codec, s)
		}
		return v
	}
	current := cfg.Links.New.Codec
	if got := browsertest.Eval[string](t, b, `document.querySelector('#links-memory tr.current')?.dataset.codec || ''`); got != current {
		t.Errorf("the current format shown is %q, want %q", got, current)
	}
	// The compact format of the store is what the migration is for: it
	// must cost Redis less than the JSON baseline.
	if base, compact := usage(linkstore.CodecJSONRaw), usage(current); compact >= base {
		t.Errorf("MEMORY USAGE per record: %s %.0f B, baseline %.0f B; want it smaller", current, compact, base)
	}
	if got := browsertest.Eval[string](t, b, `document.querySelector('#links-memory tr[data-codec="json-raw"] td.ratio').textContent`); got != "1.00×" {
		t.Errorf("baseline ratio shown = %q, want 1.00×", got)
	}
	if after := countKeys(t, rdb, cfg.Links.New.Namespace); after != keysBefore {
		t.Errorf("keys under %s: %d before the memory report, %d after; the scratch keys must be deleted", cfg.Links.New.Namespace, keysBefore, after)
	}
	b.Snapshot(t, "links")
	checkNoNullText(t, b)

	// Feed: an author with two followers and a celebrity with three.
	tag := ns[len(ns)-6:]
	newUser := func(name string) int64 {
		var u struct{ ID int64 }
		api.doJSON("POST", "/v1/users", fmt.Sprintf(`{"username":"%s%s","profilePic":"https://img.example/u.png"}`, name, tag), http.StatusCreated, &u)
		return u.ID
	}
	author, celeb := newUser("au"), newUser("ce")
	readers := []int64{newUser("ra"), newUser("rb"), newUser("rc")}
	for i, r := range readers {
		if i < 2 {
			api.doJSON("PUT", fmt.Sprintf("/v1/users/%d/follows/%d", r, author), "", http.StatusNoContent, nil)
		}
		api.doJSON("PUT", fmt.Sprintf("/v1/users/%d/follows/%d", r, celeb), "", http.StatusNoContent, nil)
	}
	b.Do(t, "open Feed", 10*time.Second, chromedp.Click(chromedp.CSS(`#nav a[data-view=feed]`)), chromedp.WaitVisible(chromedp.ID("post")))
	postAs := func(who int64, text string) int64 {
		t.Helper()
		previous := browsertest.Eval[string](t, b, `document.getElementById('fanout').dataset.post || ''`)
		b.Do(t, "post as "+strconv.FormatInt(who, 10), 10*time.Second,
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById('author-id').value = '%d'; document.getElementById('post-text').value = ''`, who)),
			chromedp.SendKeys(chromedp.ID("post-text"), text), chromedp.Click(chromedp.ID("post")))
		b.WaitFor(t, "the fan-out to finish", fmt.Sprintf(`document.getElementById('fanout').dataset.post !== %q && document.getElementById('fanout').dataset.state === 'done'`, previous), 30*time.Second)
		id, err := strconv.ParseInt(browsertest.Eval[string](t, b, `document.getElementById('fanout').dataset.post`), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	pushed := postAs(author, "오늘 점심은 치킨 <b>x</b>")
	var progress struct {
		Reached, Followers int64
		Celebrity          bool
	}
	api.getJSON(fmt.Sprintf("/v1/posts/%d/fanout", pushed), &progress)
	if progress.Followers != 2 || progress.Reached != 2 {
		t.Errorf("fan-out of post %d per the API: %+v, want both followers reached", pushed, progress)
	}
	if got := browsertest.Eval[string](t, b, `document.querySelector('#fanout .reached').textContent`); got != "2 / 2" {
		t.Errorf("fan-out shown as %q, want 2 / 2", got)
	}
	if n := browsertest.Eval[int](t, b, `document.querySelectorAll('#fanout svg path.series').length`); n != 1 {
		t.Errorf("the fan-out chart has %d lines, want 1", n)
	}
	celebPost := postAs(celeb, "celebrity news")
	if got := browsertest.Eval[string](t, b, `document.querySelector('#fanout .note').textContent`); !strings.Contains(got, "celebrity") {
		t.Errorf("the celebrity's post is described as %q, want it to say it is pulled", got)
	}

	// The first reader's feed under each strategy: the served one is what
	// GET /v1/users/{id}/feed answers; push lacks the celebrity's post.
	b.Do(t, "show the reader's feed", 10*time.Second,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById('reader-id').value = '%d'`, readers[0])), chromedp.Click(chromedp.ID("show-feed")))
	b.WaitFor(t, "the feed columns", fmt.Sprintf(`document.getElementById('feed-columns').dataset.user === '%d'`, readers[0]), 10*time.Second)
	column := func(strategy string) []string {
		return browsertest.Eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll('#feed-columns [data-strategy=%s] li')].map(li => li.dataset.postId)`, strategy))
	}
	both := []string{strconv.FormatInt(celebPost, 10), strconv.FormatInt(pushed, 10)}
	for _, st := range []string{"pull", "hybrid"} {
		if got := column(st); !slices.Equal(got, both) {
			t.Errorf("%s column = %v, want both posts newest first %v", st, got, both)
		}
	}
	if got := column("push"); !slices.Equal(got, both[1:]) {
		t.Errorf("push column = %v, want only the pushed post %v (the celebrity's is pulled)", got, both[1:])
	}
	var served struct {
		Posts []struct{ ID int64 } `json:"posts"`
	}
	api.getJSON(fmt.Sprintf("/v1/users/%d/feed", readers[0]), &served)
	var servedIDs []string
	for _, p := range served.Posts {
		servedIDs = append(servedIDs, strconv.FormatInt(p.ID, 10))
	}
	servedStrategy := browsertest.Eval[string](t, b, `[...document.querySelectorAll('#feed-columns .plan')].filter(p => p.querySelector('.took').textContent === 'served').map(p => p.dataset.strategy).join()`)
	if servedStrategy != string(cfg.Feed.Strategy) || !slices.Equal(column(servedStrategy), servedIDs) {
		t.Errorf("served column %q = %v, want %s with the API's feed %v", servedStrategy, column(servedStrategy), cfg.Feed.Strategy, servedIDs)
	}
	if got := browsertest.Eval[string](t, b, `document.getElementById('celebrity-threshold').textContent`); got != "3" {
		t.Errorf("celebrity threshold shown = %q, want 3", got)
	}
	if got := browsertest.Eval[string](t, b, fmt.Sprintf(`document.querySelector('#feed-columns [data-strategy=pull] li[data-post-id="%d"] .text').textContent`, pushed)); got != "오늘 점심은 치킨 <b>x</b>" {
		t.Errorf("post text shown as %q, want the literal text", got)
	}
	// Create a user and a follow in the page.
	b.Do(t, "create a user", 10*time.Second, chromedp.SendKeys(chromedp.ID("new-username"), "page"+tag), chromedp.Click(chromedp.ID("create-user")))
	b.WaitFor(t, "the new user", `document.getElementById('people-result').dataset.userId !== undefined`, 10*time.Second)
	newID := browsertest.Eval[string](t, b, `document.getElementById('people-result').dataset.userId`)
	b.Do(t, "follow the author", 10*time.Second,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById('follower-id').value = %q; document.getElementById('followee-id').value = '%d'`, newID, author)),
		chromedp.Click(chromedp.ID("follow")))
	b.WaitFor(t, "the follow", `document.getElementById('people-result').textContent.includes('follows')`, 10*time.Second)
	var authorNow struct {
		FollowerCount int `json:"followerCount"`
	}
	api.getJSON(fmt.Sprintf("/v1/users/%d", author), &authorNow)
	if authorNow.FollowerCount != 3 {
		t.Errorf("the author has %d followers after the follow made in the page, want 3", authorNow.FollowerCount)
	}
	b.Snapshot(t, "feed")
	checkNoNullText(t, b)

	// The token stays in the page's memory: no storage, cookie or URL holds
	// it, and a reload forgets it.
	leaks := browsertest.Eval[string](t, b, fmt.Sprintf(`(() => {
		const token = %q;
		const stores = [location.href, document.cookie, JSON.stringify({...localStorage}), JSON.stringify({...sessionStorage})];
		return stores.filter(s => s.includes(token)).join(' | ') + (localStorage.length + sessionStorage.length ? ' storage used' : '');
	})()`, cfg.API.AdminToken))
	if leaks != "" {
		t.Errorf("the admin token was kept outside memory: %s", leaks)
	}
	b.Do(t, "reload", 30*time.Second, chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/console/#links"), chromedp.WaitVisible(chromedp.ID("links-token")))
	if got := browsertest.Eval[string](t, b, `document.getElementById('admin-token').value + document.getElementById('links-mode').textContent`); got != "" {
		t.Errorf("after a reload the page still has the token or admin data: %q", got)
	}
	if errs := b.TakeJSErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
}

// checkNoNullText fails when the visible view shows "null" or "undefined":
// a missing value rendered as text.
func checkNoNullText(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	text := browsertest.Eval[string](t, b, `[...document.querySelectorAll('#views > section:not([hidden])')].map(s => s.innerText).join(' ')`)
	for _, word := range []string{"null", "undefined", "NaN"} {
		if strings.Contains(text, word) {
			t.Errorf("the view shows %q: %.300s", word, text)
		}
	}
}

// enterToken types token into the header's admin box, as a person does.
func enterToken(t *testing.T, b *browsertest.Browser, token string) {
	t.Helper()
	b.Do(t, "enter the admin token", 10*time.Second,
		chromedp.Evaluate[chromedp.Void](`document.getElementById('admin-token').value = ''`),
		chromedp.SendKeys(chromedp.ID("admin-token"), token),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('admin-token').dispatchEvent(new Event('change'))`))
}

// shownNames are the names (address or host) of the rows of a replica table.
func shownNames(t *testing.T, b *browsertest.Browser, table string) []string {
	return browsertest.Eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll('#%s tbody tr')].map(r => r.dataset.name)`, table))
}

func shownText(t *testing.T, b *browsertest.Browser, table, name, cell string) string {
	return browsertest.Eval[string](t, b, fmt.Sprintf(`document.querySelector('#%s tr[data-name=%q] td.%s')?.textContent || ''`, table, name, cell))
}

func shownCell(t *testing.T, b *browsertest.Browser, table, name, cell string) int {
	t.Helper()
	n, err := strconv.Atoi(shownText(t, b, table, name, cell))
	if err != nil {
		t.Fatalf("%s of %s in #%s: %v", cell, name, table, err)
	}
	return n
}

// writeOldOnlyClick stores a click in the old store only (json-raw under a
// text key, as the old store writes) and returns its id.
func writeOldOnlyClick(t *testing.T, redisAddr, namespace string) string {
	t.Helper()
	rec := linkstore.Generate(7, 1)[0]
	rec.ClickID = linkstore.NewClickID()
	rec.ExpiresAt = time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	codec, err := linkstore.NewCodec(linkstore.CodecJSONRaw, linkstore.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	value, err := codec.Encode(nil, &rec)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	if err := rdb.Set(context.Background(), namespace+linkstore.Key(linkstore.KeyText, rec.ClickID), value, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	return rec.ClickID.String()
}

// countKeys counts the keys that start with prefix.
func countKeys(t *testing.T, rdb *redis.Client, prefix string) int {
	t.Helper()
	n := 0
	iter := rdb.Scan(context.Background(), 0, prefix+"*", 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// adminClient sends requests, with the admin token, through a client that
// checks every exchange against api/openapi.json.
type adminClient struct {
	t     *testing.T
	base  string
	token string
	httpc *http.Client
}

func (c *adminClient) getJSON(target string, v any) {
	c.t.Helper()
	c.doJSON("GET", target, "", http.StatusOK, v)
}

// doJSON sends the request and decodes a JSON answer into v (if not nil);
// status 0 accepts any status.
func (c *adminClient) doJSON(method, target, body string, status int, v any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+target, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.httpc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if status != 0 && resp.StatusCode != status {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, target, resp.StatusCode, status, raw)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			c.t.Fatalf("%s %s: %v", method, target, err)
		}
	}
}

// TestConsoleReindexViewInChromium runs a live reindex from the console in
// a real headless Chromium against the whole server on the real stack:
// started with the token typed into the page, its progress and ETA shown
// while it copies, paused, resumed and rethrottled from the page (each seen
// by the API), run to done, rolled back, and listed in the history of runs.
func TestConsoleReindexViewInChromium(t *testing.T) {
	st := stacktest.Require(t)
	chromium := browsertest.RequireChromium(t)
	cfg := fullServerConfig(t, st)
	cfg.Workers = true // the indexer loads the catalog below
	addr := serve(t, cfg)
	base := "http://" + addr
	api := &adminClient{t: t, base: base, token: cfg.API.AdminToken, httpc: validatingClient(t)}

	// A catalog large enough for a throttled copy to take a while.
	const shops = 300
	gen := catalog.NewGenerator(11)
	events := make([]catalog.Event, 0, shops)
	for i := range shops {
		events = append(events, gen.Shop(i).UpsertEvent())
	}
	body, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	api.doJSON("POST", "/v1/events", string(body), http.StatusAccepted, nil)
	var meta struct {
		ReindexAliases []string `json:"reindex_aliases"`
	}
	api.getJSON("/console/api/meta", &meta)
	if len(meta.ReindexAliases) == 0 {
		t.Fatal("the console meta lists no reindex alias")
	}
	alias := meta.ReindexAliases[len(meta.ReindexAliases)-1] // the split layout's menus: the most documents
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		var found struct{ Total int }
		api.doJSON("GET", "/v1/search?layout=split&size=1", "", 0, &found)
		if found.Total >= shops {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the indexer made %d of %d shops searchable in a minute", found.Total, shops)
		}
	}

	b := browsertest.New(t, chromium)
	b.ScreenshotOnFailure(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("page errors: %v", b.TakeJSErrors())
		}
	})
	b.Do(t, "open the Reindex view", 30*time.Second, chromedp.Navigate(base+"/console/#reindex"), chromedp.WaitVisible(chromedp.ID("reindex-token")))
	enterToken(t, b, cfg.API.AdminToken)
	b.WaitFor(t, "the empty history", `document.getElementById('reindex-history').dataset.count === '0'`, 10*time.Second)
	b.Do(t, "start a throttled reindex", 10*time.Second,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById('reindex-alias').value = %q`, alias)),
		chromedp.SendKeys(chromedp.ID("reindex-rate"), "10"), chromedp.SendKeys(chromedp.ID("reindex-batch"), "10"),
		chromedp.Click(chromedp.ID("reindex-start")))
	b.WaitFor(t, "the copy with an ETA", `document.getElementById('reindex-job').dataset.step === 'copying' && document.querySelector('#reindex-job .eta').textContent.startsWith('ETA ')`, 30*time.Second)
	id := browsertest.Eval[string](t, b, `document.getElementById('reindex-job').dataset.job`)
	type jobStatus struct {
		Step              string  `json:"step"`
		Alias             string  `json:"alias"`
		Paused            bool    `json:"paused"`
		RequestsPerSecond float64 `json:"requests_per_second"`
		CopyPercent       float64 `json:"copy_percent"`
	}
	var job jobStatus
	api.getJSON("/admin/reindex/"+id, &job)
	if job.Alias != alias || job.RequestsPerSecond != 10 {
		t.Errorf("the job started in the page: %+v, want alias %s at 10 requests/s", job, alias)
	}
	if p := browsertest.Eval[string](t, b, `document.querySelector('#reindex-job .percent').textContent`); !strings.HasSuffix(p, " %") {
		t.Errorf("copy progress shown as %q", p)
	}

	b.Do(t, "pause", 10*time.Second, chromedp.Click(chromedp.ID("reindex-pause")))
	b.WaitFor(t, "paused", `document.getElementById('reindex-job').dataset.paused === 'true'`, 10*time.Second)
	if api.getJSON("/admin/reindex/"+id, &job); !job.Paused {
		t.Errorf("paused in the page, the API says %+v", job)
	}
	b.Do(t, "resume", 10*time.Second, chromedp.Click(chromedp.ID("reindex-resume")))
	b.WaitFor(t, "resumed", `document.getElementById('reindex-job').dataset.paused === 'false'`, 10*time.Second)
	b.Do(t, "rethrottle to unthrottled", 10*time.Second, chromedp.SendKeys(chromedp.ID("rethrottle-rate"), "-1"), chromedp.Click(chromedp.ID("reindex-rethrottle")))
	b.WaitFor(t, "the new rate", `document.querySelector('#reindex-job .rate').textContent === 'unthrottled'`, 10*time.Second)
	if api.getJSON("/admin/reindex/"+id, &job); job.RequestsPerSecond != -1 || job.Paused {
		t.Errorf("rethrottled in the page, the API says %+v", job)
	}
	b.WaitFor(t, "the reindex to finish", `document.getElementById('reindex-job').dataset.step === 'done'`, 90*time.Second)
	if got := browsertest.Eval[string](t, b, `document.querySelector('#reindex-job .percent').textContent`); got != "100.0 %" {
		t.Errorf("a done copy shows %q", got)
	}
	b.Snapshot(t, "done")

	b.Do(t, "roll back", 10*time.Second, chromedp.Click(chromedp.ID("reindex-rollback")))
	b.WaitFor(t, "the rollback", `document.getElementById('reindex-job').dataset.step === 'rolled_back'`, 60*time.Second)
	if api.getJSON("/admin/reindex/"+id, &job); job.Step != "rolled_back" {
		t.Errorf("rolled back in the page, the API says step %s", job.Step)
	}
	var list struct {
		Jobs []struct{ ID, Step string } `json:"jobs"`
	}
	api.getJSON("/admin/reindex", &list)
	shown := browsertest.Eval[[]string](t, b, `[...document.querySelectorAll('#reindex-history tbody tr')].map(r => r.dataset.job + ' ' + r.dataset.step)`)
	var want []string
	for _, j := range list.Jobs {
		want = append(want, j.ID+" "+j.Step)
	}
	if len(want) != 1 || !slices.Equal(shown, want) {
		t.Errorf("history shown = %v, want the API's runs %v", shown, want)
	}
	b.Snapshot(t, "rolled-back")
	checkNoNullText(t, b)
	if errs := b.TakeJSErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
}
