package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher"
)

// runSearch runs one search directly on OpenSearch and prints the page.
// Search parameters are the API's, e.g. `baedal search q=치킨 lat=37.5 lon=127.03 sort=eta`.
func runSearch(ctx context.Context, args []string) error {
	c := newCommand("search", "baedal search [flags] [name=value ...]",
		"Run one search directly on OpenSearch and print the page. name=value pairs are the\n"+
			"/v1/search parameters: q, lat, lon, open_now, category, max_delivery_fee, min_rating,\n"+
			"min_price, max_price, max_total_fee, page, size, layout, explain (true, false, dsl),\n"+
			"sort ("+strings.Join(query.Sorts(), ", ")+").\n"+
			"Flags may come anywhere among them.",
		"baedal search q=치킨 lat=37.4979 lon=127.0276 sort=eta --layout nested --json")
	osCfg := backend.Defaults().OpenSearch
	c.Group("OpenSearch", osCfg.Flags)
	idx := layout.Defaults()
	c.Group("layout", idx.Flags)
	scfg := searcher.Defaults()
	c.Group("search", scfg.Flags)
	var kindName, explain *string
	var asJSON *bool
	c.Group("output", func(fs *flag.FlagSet) {
		kindName = fs.String("layout", "", "layout to search: "+strings.Join(layout.KindNames(), ", ")+" (default: as the server's, hot when every\nOpenSearch node has the baedal-hot plugin, else split)")
		asJSON = fs.Bool("json", false, "print the whole JSON response")
		explain = fs.String("explain", "", "add the executed plan to the response: true, or dsl for the request bodies sent to\nOpenSearch, ready for Dev Tools (implies --json)")
	})
	stateDir := c.FS.String("state-dir", localstack.Defaults().StateDir, "use the local stack in this directory when --opensearch-urls is not given")
	positional, err := parseWithArgs(c, args)
	if err != nil {
		return err
	}
	if err := errors.Join(idx.Validate(), scfg.Validate()); err != nil {
		return err
	}
	params, err := searchParams(positional)
	if err != nil {
		return err
	}
	if *explain != "" {
		if params.Has("explain") {
			return usageError{errors.New("--explain and explain= are both given; give one")}
		}
		params.Set("explain", *explain)
		*asJSON = true // the plan is only in the JSON
	}
	if l := params.Get("layout"); l != "" {
		*kindName = l // the API's parameter works here too
	}
	var kind layout.Kind
	if *kindName != "" {
		if kind, err = layout.ParseKind(*kindName); err != nil {
			return fmt.Errorf("--layout: %w", err)
		}
	}
	req, err := query.ParseRequest(params)
	if err != nil || parseOnly(ctx) {
		return err
	}
	if len(osCfg.URLs) == 0 {
		st, err := localstack.Load(*stateDir)
		if err != nil {
			return errors.Join(errors.New("no --opensearch-urls and no local stack"), err)
		}
		osCfg.URLs = st.OpenSearchURLs
	}
	client, err := backend.OpenOpenSearch(osCfg)
	if err != nil {
		return err
	}
	osc := osapi.New(client)
	srch := searcher.New(osc, idx, scfg, nil)
	if kind == "" {
		_, unavailable, err := layout.RunnableKinds(ctx, osc)
		if err != nil {
			return err
		}
		for k, why := range unavailable {
			srch.SetUnavailable(k, why)
		}
		kind = srch.DefaultKind()
	}
	resp, err := srch.Search(ctx, req, kind)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp)
	}
	fmt.Printf("%d shops match (%s layout, %.1f ms)\n", resp.Total, resp.Layout, resp.TookMs)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSHOP\tOPEN\tMIN\tFEE\tRATING\tMATCHED MENUS")
	for _, sh := range resp.Shops {
		var menus []string
		for _, m := range sh.MatchedMenus {
			menus = append(menus, fmt.Sprintf("%s %d원", m.Name, m.Price))
		}
		fmt.Fprintf(tw, "%d\t%s\t%v\t%d\t%d\t%.1f\t%s\n", sh.ID, sh.Name, sh.Open, sh.DeliveryMinutes, sh.DeliveryFee, sh.Rating, strings.Join(menus, ", "))
	}
	return tw.Flush()
}

// searchParams turns name=value arguments into search parameters; a name
// given twice is refused, as the API refuses it.
func searchParams(args []string) (url.Values, error) {
	params := url.Values{}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("search parameter %q: want name=value (flags such as --layout may come anywhere)", kv)
		}
		if params.Has(k) {
			return nil, fmt.Errorf("search parameter %q is given twice", k)
		}
		params.Set(k, v)
	}
	return params, nil
}
