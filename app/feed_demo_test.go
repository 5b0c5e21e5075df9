package app

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baedal/baedal/feed"
	"github.com/baedal/baedal/internal/browsertest"
	"github.com/baedal/baedal/internal/stacktest"
)

// TestFeedViewOnTheDemoInChromium opens the console's Feed view in a real
// headless Chromium on a server that runs the feed demo as `baedal up`
// does (a database of its own, seeded with the write-up's experiment graph
// by the demo itself, posts made while the page is open), and on a server
// without feed users. On the demo the view opens on user A without anything
// typed: posts under each strategy, a celebrity's post in pull and hybrid
// but not in push, the celebrity threshold, and the fan-out chart filled by
// the demo's posts, pushed ones and pulled ones. Without feed users it says
// what to run.
func TestFeedViewOnTheDemoInChromium(t *testing.T) {
	st := stacktest.Require(t)
	chromium := browsertest.RequireChromium(t)

	// A server on an empty database, no demo; OpenSearch is not needed.
	empty := fullServerConfig(t, st)
	empty.Backends.Postgres.URL = stacktest.Database(t)
	empty.Backends.OpenSearch.URLs = []string{"http://127.0.0.1:1"}
	empty.Workers = false
	emptyBase := "http://" + serve(t, empty)

	// The demo, small and quick: 200 users, the celebrity's 202 followers
	// over the threshold of 100, a post every 2 s, every second one the
	// celebrity's.
	cfg := fullServerConfig(t, st)
	cfg.Backends.Postgres.URL = stacktest.Database(t)
	cfg.Workers = true
	cfg.Feed.CelebrityThreshold = 100
	cfg.Demo.FeedUsers = 200
	cfg.Demo.FeedPostsPerMinute = 30
	cfg.Demo.FeedCelebrityEvery = 2
	base := "http://" + serve(t, cfg)
	api := &adminClient{t: t, base: base, token: cfg.API.AdminToken, httpc: validatingClient(t)}

	b := browsertest.New(t, chromium)
	b.ScreenshotOnFailure(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("page errors: %v", b.TakeJSErrors())
		}
	})

	// No feed users: a hint naming the command, and no feed asked for.
	b.Do(t, "open the Feed view without feed users", 30*time.Second, chromedp.Navigate(emptyBase+"/console/#feed"), chromedp.WaitVisible(chromedp.ID("feed-example")))
	b.WaitFor(t, "the empty hint", `document.getElementById('feed-example').dataset.state === 'empty'`, 10*time.Second)
	if hint := browsertest.Eval[string](t, b, `document.getElementById('feed-example').textContent`); !strings.Contains(hint, "baedal feed seed --preset experiment") || !strings.Contains(hint, "baedal up") {
		t.Errorf("the empty Feed view says %q, want the seed command and the demo", hint)
	}
	if got := browsertest.Eval[string](t, b, `document.getElementById('feed-columns').dataset.state || ''`); got != "" {
		t.Errorf("without feed users the view asked for a feed (state %q)", got)
	}
	b.Snapshot(t, "empty")
	checkNoNullText(t, b)

	// The demo: the example, as the API finds it, is the experiment's.
	var ex feed.Example
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		api.getJSON("/v1/feed/example", &ex)
		if ex.Reader != nil || time.Now().After(deadline) {
			break
		}
	}
	if ex.Users != 203 || ex.Reader == nil || ex.Reader.Username != "user_a" || ex.MostFollowed == nil || ex.MostFollowed.Username != "celebrity" || ex.MostFollowed.FollowerCount != 202 {
		t.Fatalf("the demo's example = %+v, want the experiment of 200 users: user_a reads, the celebrity has 202 followers", ex)
	}
	a, celeb := strconv.FormatInt(ex.Reader.ID, 10), strconv.FormatInt(ex.MostFollowed.ID, 10)

	// The view opens on user A, nothing typed.
	b.Do(t, "open the demo's Feed view", 30*time.Second, chromedp.Navigate(base+"/console/#feed"), chromedp.WaitVisible(chromedp.ID("feed-example")))
	b.WaitFor(t, "user A's feed", fmt.Sprintf(`document.getElementById('feed-columns').dataset.user === %q && document.getElementById('feed-columns').dataset.state === 'data'`, a), 20*time.Second)
	column := func(strategy string) []string {
		return browsertest.Eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll('#feed-columns [data-strategy=%s] li')].map(li => li.dataset.postId)`, strategy))
	}
	for _, s := range feed.Strategies() {
		if n := len(column(string(s))); n == 0 {
			t.Errorf("user A's feed under %s shows no posts", s)
		}
	}
	if got := browsertest.Eval[string](t, b, `document.getElementById('reader-id').value`); got != a {
		t.Errorf("the reader box holds %q, want user A %s", got, a)
	}
	if got := browsertest.Eval[string](t, b, `document.getElementById('celebrity-threshold').textContent`); got != "100" {
		t.Errorf("celebrity threshold shown = %q, want 100", got)
	}
	shownExample := browsertest.Eval[string](t, b, `document.getElementById('feed-example').textContent`)
	for _, want := range []string{"user_a (" + a + ")", "celebrity (" + celeb + ")", "202 followers, a celebrity: pulled at read time"} {
		if !strings.Contains(shownExample, want) {
			t.Errorf("the example shown = %q, want it to contain %q", shownExample, want)
		}
	}

	// A celebrity's post by the demo, made while the page is open: pull and
	// hybrid show it, push does not (no timeline receives it).
	celebPost := func() string {
		return browsertest.Eval[string](t, b, `(() => {
			const li = [...document.querySelectorAll('#feed-columns [data-strategy=pull] li')].find(li =>
				li.querySelector('strong').textContent === 'celebrity' && li.querySelector('.text').textContent.includes('demo post'));
			return li ? li.dataset.postId : '';
		})()`)
	}
	b.WaitFor(t, "a demo post of the celebrity in user A's feed", `[...document.querySelectorAll('#feed-columns [data-strategy=pull] li')].some(li =>
		li.querySelector('strong').textContent === 'celebrity' && li.querySelector('.text').textContent.includes('demo post'))`, 30*time.Second)
	id := celebPost()
	if !slices.Contains(column("hybrid"), id) {
		t.Errorf("hybrid column %v lacks the celebrity's post %s", column("hybrid"), id)
	}
	if slices.Contains(column("push"), id) {
		t.Errorf("push column %v has the celebrity's post %s; hybrid pulls it, no timeline receives it", column("push"), id)
	}

	// The fan-out chart fills by itself as the demo posts: a pushed post
	// reaching its followers, and a celebrity's post, pulled.
	pushed := `(() => {
		const f = document.getElementById('fanout');
		return f.dataset.source === 'feed' && f.dataset.state === 'done' && Number(f.dataset.followers) > 0 &&
			f.dataset.reached === f.dataset.followers && f.querySelector('svg path.series') !== null &&
			f.querySelector('.note').textContent.includes('pushed into each follower');
	})()`
	b.WaitFor(t, "the fan-out of a pushed demo post", pushed, 30*time.Second)
	b.Snapshot(t, "pushed")
	pulled := `(() => {
		const f = document.getElementById('fanout');
		return f.dataset.source === 'feed' && f.dataset.state === 'done' && f.querySelector('svg path.series') !== null &&
			f.querySelector('.note').textContent.includes('celebrity');
	})()`
	b.WaitFor(t, "the fan-out of a pulled demo post", pulled, 30*time.Second)
	b.Snapshot(t, "pulled")
	checkNoNullText(t, b)
	if errs := b.TakeJSErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
}
