package replbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/replica/osread"
)

// words is the vocabulary of shop names and the search mix.
var words = []string{
	"chicken", "pizza", "bibimbap", "tteokbokki", "jjajangmyeon", "sushi", "burger", "coffee", "bakery", "salad",
	"ramen", "bulgogi", "kimbap", "dumpling", "noodle", "tacos", "curry", "pho", "bingsu", "donkatsu",
	"grill", "house", "kitchen", "express", "garden", "golden", "royal", "spicy", "fresh", "seoul",
}

var categories = []string{"korean", "chinese", "japanese", "western", "cafe", "dessert", "snack", "fastfood", "asian", "bbq"}

var cities = []string{"gangnam", "mapo", "songpa", "jongno", "yongsan", "seocho", "busan", "incheon"}

// runOpenSearch runs both OpenSearch parts on a 3-node cluster, on one
// index with a copy of every shard on every node: shard-copy ARS on and off
// with one node limited by a CPU quota (compareARS), then the endpoint
// scenarios with that node as the victim (compareEndpoints), each node
// capped at OpenSearchNodeCPUPercent when that is set.
func runOpenSearch(ctx context.Context, cfg Config, st *localstack.State, rep *bench.Report, out io.Writer) (res ARSResult, endpoints EndpointsResult, err error) {
	if len(st.OpenSearchURLs) < 3 {
		res.Skipped = fmt.Sprintf("the stack has %d OpenSearch node(s), need 3", len(st.OpenSearchURLs))
		endpoints.Skipped = res.Skipped
		return res, endpoints, nil
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.OpenSearchClients + 4, ResponseHeaderTimeout: 60 * time.Second}}
	defer hc.CloseIdleConnections()
	master, err := masterNode(ctx, hc, st.OpenSearchURLs[0])
	if err != nil {
		return res, endpoints, err
	}
	// Degrade the last node that is not the elected master; coordinate on
	// the first other node.
	degraded, coordinator := -1, -1
	for i := len(st.OpenSearchURLs) - 1; i >= 0; i-- {
		if "opensearch-"+strconv.Itoa(i+1) != master {
			degraded = i
			break
		}
	}
	for i := range st.OpenSearchURLs {
		if i != degraded {
			coordinator = i
			break
		}
	}
	degradedName := "opensearch-" + strconv.Itoa(degraded+1)
	base := st.OpenSearchURLs[coordinator]
	index := "replbench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := loadShops(ctx, hc, base, index, cfg, out); err != nil {
		return res, endpoints, err
	}
	defer doJSON(context.Background(), hc, http.MethodDelete, base+"/"+index, nil, nil)
	pid, err := componentPID(st, degradedName)
	if err != nil {
		return res, endpoints, err
	}
	if res, err = compareARS(ctx, cfg, hc, base, index, degradedName, pid, coordinator, rep, out); err != nil {
		return res, endpoints, err
	}
	victim := endpointVictim{name: degradedName, url: st.OpenSearchURLs[degraded], pid: pid}
	var nodes []string
	for i := range st.OpenSearchURLs {
		nodes = append(nodes, "opensearch-"+strconv.Itoa(i+1))
	}
	caps, release, err := constrainServers(st, nodes, cfg.OpenSearchNodeCPUPercent, cfg.isolateNodes())
	defer func() { err = errors.Join(err, release()) }()
	if err != nil {
		return res, endpoints, err
	}
	if len(caps) > 0 {
		victim.cap = caps[degraded]
	}
	endpoints, err = compareEndpoints(ctx, cfg, st.OpenSearchURLs, index, victim, rep, out)
	endpoints.NodeCPUPercent, endpoints.IsolatedServers = cfg.OpenSearchNodeCPUPercent, cfg.isolateNodes()
	return res, endpoints, err
}

// compareARS compares shard-copy ARS on and off with node degradedName
// (process pid) limited by a CPU quota. Searches go to a healthy
// coordinating node (base, node number coordinator+1), so only the choice
// of shard copies differs between the sides. ARS is on again when it
// returns.
func compareARS(ctx context.Context, cfg Config, hc *http.Client, base, index, degradedName string, pid, coordinator int, rep *bench.Report, out io.Writer) (ARSResult, error) {
	var res ARSResult
	defer osread.SetAdaptiveReplicaSelection(context.Background(), hc, base, true) // OpenSearch's default
	limit, err := LimitCPU(pid, cfg.OpenSearchDegradePercent)
	if err != nil {
		return res, err
	}
	defer limit.Remove()
	res.Degradation = fmt.Sprintf("node %s (pid %d, not the master, not coordinating) limited to %d%% of one core; searches coordinated by opensearch-%d",
		degradedName, pid, cfg.OpenSearchDegradePercent, coordinator+1)

	var on, off bench.LoadResult
	var shareOn, shareOff [2]uint64 // degraded node's queries, all queries
	side := func(name string, ars bool, acc *bench.LoadResult, share *[2]uint64) bench.Side {
		return bench.Side{Name: name, Run: func(round int) error {
			if err := osread.SetAdaptiveReplicaSelection(ctx, hc, base, ars); err != nil {
				return err
			}
			fmt.Fprintf(out, "opensearch: round %d: ARS %t\n", round+1, ars)
			before, err := queryTotals(ctx, hc, base)
			if err != nil {
				return err
			}
			r := bench.RunClosedLoop(ctx, cfg.OpenSearchClients, cfg.OpenSearchRoundDuration, searchMix(hc, base, index, cfg, round))
			after, err := queryTotals(ctx, hc, base)
			if err != nil {
				return err
			}
			for node, n := range after {
				d := n - before[node]
				share[1] += d
				if node == degradedName {
					share[0] += d
				}
			}
			acc.Merge(r)
			return ctx.Err()
		}}
	}
	if err := bench.Interleave(cfg.Rounds, side("ars-off", false, &off, &shareOff), side("ars-on", true, &on, &shareOn)); err != nil {
		return res, err
	}
	ars, err := osread.GetAdaptiveReplicaSelection(ctx, hc, base)
	if err != nil {
		return res, err
	}
	res.Ratios = ratios(on, off, cfg.Seed)
	onSum, offSum := on.Summary(), off.Summary()
	res.On, res.Off = &onSum, &offSum
	if shareOn[1] > 0 {
		res.DegradedNodeShareOn = round3(float64(shareOn[0]) / float64(shareOn[1]))
	}
	if shareOff[1] > 0 {
		res.DegradedNodeShareOff = round3(float64(shareOff[0]) / float64(shareOff[1]))
	}
	cmp := bench.CompareLoad("ARS off", off, "ARS on", on)
	var arsText []string
	for _, n := range ars.Nodes {
		for _, t := range n.Targets {
			arsText = append(arsText, fmt.Sprintf("%s→%s rank %.3g, queue %.2f, service %.2f ms, response %.2f ms", n.Node, t.Target, t.Rank, t.AvgQueueSize, t.AvgServiceTimeNS/1e6, t.AvgResponseNS/1e6))
		}
	}
	rep.Add(bench.Section{
		Title: "OpenSearch shard-copy ARS, one node degraded",
		Text: fmt.Sprintf("Index %s: %d shop documents, 3 shards × 2 replicas (a copy of every shard on every node). %d concurrent clients run a mix of "+
			"full-text, filtered-sort and aggregation searches; ARS (%s) off and on alternate for %d rounds of %s.\n\nDegradation: %s.\n\n"+
			"Share of shard queries run by the degraded node: ARS off %.1f%%, ARS on %.1f%%.\n\nARS on / off: throughput %.3f, p50 %.3f, p90 %.3f, p99 %.3f.\n\nARS statistics at the end (ARS enabled: %t): %s",
			index, cfg.OpenSearchDocs, cfg.OpenSearchClients, osread.ARSSetting, cfg.Rounds, cfg.OpenSearchRoundDuration, res.Degradation,
			res.DegradedNodeShareOff*100, res.DegradedNodeShareOn*100, res.ThroughputRatio, res.P50Ratio, res.P90Ratio, res.P99Ratio,
			ars.Enabled, strings.Join(arsText, "; ")),
		Table:  &cmp,
		Charts: []bench.Chart{bench.LatencyCDF("Search latency, one node degraded", []string{"ARS off", "ARS on"}, []*bench.LatencyRecorder{off.Latency, on.Latency})},
	})
	return res, nil
}

func masterNode(ctx context.Context, hc *http.Client, base string) (string, error) {
	var rows []struct {
		Node string `json:"node"`
	}
	if err := doJSON(ctx, hc, http.MethodGet, base+"/_cat/master?format=json", nil, &rows); err != nil {
		return "", err
	}
	if len(rows) != 1 {
		return "", fmt.Errorf("replbench: _cat/master on %s: got %d rows, want 1", base, len(rows))
	}
	return rows[0].Node, nil
}

// queryTotals returns every node's shard query count by node name.
func queryTotals(ctx context.Context, hc *http.Client, base string) (map[string]uint64, error) {
	var body struct {
		Nodes map[string]struct {
			Name    string `json:"name"`
			Indices struct {
				Search struct {
					QueryTotal uint64 `json:"query_total"`
				} `json:"search"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	if err := doJSON(ctx, hc, http.MethodGet, base+"/_nodes/stats/indices/search", nil, &body); err != nil {
		return nil, err
	}
	totals := map[string]uint64{}
	for _, n := range body.Nodes {
		totals[n.Name] = n.Indices.Search.QueryTotal
	}
	return totals, nil
}

// loadShops creates the index and bulk-loads OpenSearchDocs shop documents.
func loadShops(ctx context.Context, hc *http.Client, base, index string, cfg Config, out io.Writer) error {
	settings := `{"settings":{"number_of_shards":3,"number_of_replicas":2,"refresh_interval":"-1"},
"mappings":{"properties":{"name":{"type":"text"},"category":{"type":"keyword"},"city":{"type":"keyword"},
"rating":{"type":"float"},"price":{"type":"integer"},"open":{"type":"boolean"}}}}`
	if err := doJSON(ctx, hc, http.MethodPut, base+"/"+index, []byte(settings), nil); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 2))
	progress := bench.NewProgress(out, "load shops", int64(cfg.OpenSearchDocs))
	const batch = 1000
	var buf bytes.Buffer
	for first := 0; first < cfg.OpenSearchDocs; first += batch {
		buf.Reset()
		last := min(first+batch, cfg.OpenSearchDocs)
		for i := first; i < last; i++ {
			fmt.Fprintf(&buf, `{"index":{"_id":"%d"}}`+"\n", i)
			doc := map[string]any{
				"name":     words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))],
				"category": categories[rng.IntN(len(categories))],
				"city":     cities[rng.IntN(len(cities))],
				"rating":   float64(rng.IntN(50))/10 + 0.1,
				"price":    5000 + rng.IntN(40000),
				"open":     rng.IntN(4) > 0,
			}
			line, _ := json.Marshal(doc)
			buf.Write(line)
			buf.WriteByte('\n')
		}
		var resp struct {
			Errors bool `json:"errors"`
		}
		if err := doJSON(ctx, hc, http.MethodPost, base+"/"+index+"/_bulk", buf.Bytes(), &resp); err != nil {
			return err
		}
		if resp.Errors {
			return fmt.Errorf("replbench: bulk load into %s: docs %d..%d had errors", index, first, last-1)
		}
		progress.Add(int64(last - first))
	}
	progress.Done()
	if err := doJSON(ctx, hc, http.MethodPut, base+"/"+index+"/_settings", []byte(`{"index":{"refresh_interval":"1s"}}`), nil); err != nil {
		return err
	}
	if err := doJSON(ctx, hc, http.MethodPost, base+"/"+index+"/_refresh", nil, nil); err != nil {
		return err
	}
	var health struct {
		Status   string `json:"status"`
		TimedOut bool   `json:"timed_out"`
	}
	if err := doJSON(ctx, hc, http.MethodGet, base+"/_cluster/health/"+index+"?wait_for_status=green&timeout=120s", nil, &health); err != nil {
		return err
	}
	if health.Status != "green" {
		return fmt.Errorf("replbench: index %s is %s after 120s, want green (every shard copy assigned)", index, health.Status)
	}
	return nil
}

// searchMix returns the closed-loop operation: one of three searches a
// delivery app runs, on random terms.
func searchMix(hc *http.Client, base, index string, cfg Config, round int) func(ctx context.Context, client int) error {
	rngs := make([]*rand.Rand, cfg.OpenSearchClients)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(cfg.Seed+uint64(round), 1000+uint64(i)))
	}
	url := base + "/" + index + "/_search"
	return func(ctx context.Context, client int) error {
		rng := rngs[client]
		var q string
		switch rng.IntN(3) {
		case 0: // full-text shop search
			q = fmt.Sprintf(`{"size":20,"query":{"match":{"name":%q}}}`, words[rng.IntN(len(words))]+" "+words[rng.IntN(len(words))])
		case 1: // category page: open shops in a city, best rated first
			q = fmt.Sprintf(`{"size":20,"query":{"bool":{"filter":[{"term":{"category":%q}},{"term":{"city":%q}},{"term":{"open":true}}]}},"sort":[{"rating":"desc"}]}`,
				categories[rng.IntN(len(categories))], cities[rng.IntN(len(cities))])
		default: // facet counts for a search
			q = fmt.Sprintf(`{"size":0,"query":{"match":{"name":%q}},"aggs":{"cat":{"terms":{"field":"category"}},"price":{"avg":{"field":"price"}}}}`, words[rng.IntN(len(words))])
		}
		var resp struct {
			Shards struct {
				Failed int `json:"failed"`
			} `json:"_shards"`
		}
		if err := doJSON(ctx, hc, http.MethodPost, url, []byte(q), &resp); err != nil {
			return err
		}
		if resp.Shards.Failed > 0 {
			return fmt.Errorf("replbench: search on %s: %d shards failed", index, resp.Shards.Failed)
		}
		return nil
	}
}

// doJSON sends body (JSON, or NDJSON for _bulk) and decodes a 2xx reply into
// v when v is not nil.
func doJSON(ctx context.Context, hc *http.Client, method, url string, body []byte, v any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		ct := "application/json"
		if strings.HasSuffix(url, "/_bulk") {
			ct = "application/x-ndjson"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("replbench: %s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return fmt.Errorf("replbench: %s %s: status %d: %s", method, url, resp.StatusCode, raw)
	}
	if v == nil {
		_, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<20))
		return err
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return fmt.Errorf("replbench: %s %s: decode: %w", method, url, err)
	}
	return nil
}
