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
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	osCfg := backend.Defaults().OpenSearch
	osCfg.Flags(fs)
	idx := layout.Defaults()
	idx.Flags(fs)
	scfg := searcher.Defaults()
	scfg.Flags(fs)
	stateDir := fs.String("state-dir", localstack.Defaults().StateDir, "use the local stack in this directory when --opensearch-urls is not given")
	kindName := fs.String("layout", string(layout.Split), "layout to search: "+strings.Join(layout.KindNames(), ", "))
	asJSON := fs.Bool("json", false, "print the whole JSON response")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: baedal search [flags] name=value ...\n\nname=value pairs are the /v1/search parameters: q, lat, lon, open_now, category, max_delivery_fee,\nmin_rating, min_price, max_price, max_total_fee, sort (%s), page, size, explain\n\n", strings.Join(query.Sorts(), ", "))
		fs.PrintDefaults()
	}
	positional, err := parseWithArgs(fs, args)
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
	if l := params.Get("layout"); l != "" {
		*kindName = l // the API's parameter works here too
	}
	kind, err := layout.ParseKind(*kindName)
	if err != nil {
		return fmt.Errorf("--layout: %w", err)
	}
	req, err := query.ParseRequest(params)
	if err != nil {
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
	resp, err := searcher.New(osapi.New(client), idx, scfg, nil).Search(ctx, req, kind)
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
