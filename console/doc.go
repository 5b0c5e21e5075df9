// Package console is baedal's web console: a few static pages (HTML, CSS and
// plain JavaScript modules, embedded with go:embed, no build step, no CDN)
// that drive the public API, plus two small JSON endpoints the pages need:
//
//	GET /                   redirects to /console/
//	GET /console/...        the embedded files under static/
//	GET /console/api/meta   categories, sorts, layouts, location presets, the
//	                        aliases live reindex can rebuild and the views
//	                        this server can show
//	GET /console/api/ops    the process's baedal_* metrics: counters, gauges
//	                        and histogram quantiles by metric name
//
// The pages hold no copies of server-side lists (categories, sorts): they
// read them from /console/api/meta. Every API error is shown to the person
// with the problem body's detail, field and allowed values.
//
// Invariant: every console response carries Content-Security-Policy
// default-src 'self' and X-Content-Type-Options nosniff; the pages load
// nothing from outside the server and insert user-controlled text only as
// text nodes (highlights are rebuilt as DOM nodes, with <em> the only element).
//
// # Adding a view
//
// A view is one ES module under static/views/ exporting
//
//	export const title = 'Feed';
//	export function mount(root, ctx) { ...; return { show() {}, hide() {} }; }
//
// plus one entry in the VIEWS list of static/app.js ({id, title, module}).
// The nav shows a view only when /console/api/meta lists its id in "views",
// so a view appears exactly when its endpoints exist: add a boolean to Deps
// (e.g. Feed, set by app when the feed routes are registered) and one line to
// Deps.views. ctx gives the view the meta object, getJSON and requestJSON
// (which turn problem bodies into errors carrying the problem),
// hasAdminToken and showProblem. A view of admin routes is marked admin in
// VIEWS: the page then shows the admin token box, and requestJSON(...,
// {admin: true}) sends the token, which lib.js keeps in memory only (never
// in storage, a cookie or the URL); the view hears of a new token by the
// 'admintoken' event on window.
//
// The views are Search, Feed, Links, Reindex, Replicas and Ops; the search
// view keeps its request in the location hash (#search?q=…), so a result
// page can be shared and reloaded. The feed view opens on the example the
// server finds in its data (GET /v1/feed/example), and says what to run
// when there are no feed users.
package console
