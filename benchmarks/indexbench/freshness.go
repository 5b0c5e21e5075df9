package indexbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/baedal/baedal/app"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/layout"
)

// freshness is one layout's freshness run: every followed change's time
// from its due time to the first search showing it, given-up ones at the
// limit (bench.FollowOpenLoop).
type freshness = bench.FollowResult

// The freshness run is open loop (bench.FollowOpenLoop): events are posted
// every postTick, and the last event of every followEvery-th post is
// followed, whatever is in flight, until a search shows it or followLimit
// has passed. A slow period is thus sampled in proportion to its duration.
// Each followed change is looked at no sooner than followMinPoll after the
// last look, the pause growing with its age (5% of it), and at most
// followLooks searches of the probes run at once, so that they stay a small
// load beside the indexing they measure; a look that waits is late, which
// lengthens a time and never drops one.
const (
	postTick      = 20 * time.Millisecond
	followEvery   = 5 // 10 followed changes per second
	followMinPoll = 10 * time.Millisecond
	followLooks   = 4
	followLimit   = 30 * time.Second
)

// userFreshnessRun measures freshness as a user sees it: it starts a baedal
// server (app.Run, its own indexer worker running layout k only, on an event
// log of its own), posts hot shop updates to its POST /v1/events at
// cfg.FreshnessRate on a fixed schedule, and for every followEvery-th post
// records the time from the post's due time to the first answer of GET
// /v1/search?layout=k (sorted by distance from the shop, so the shop is
// among the first hits) that shows the shop at the event's version or
// newer. A 503 (the layout is not ready) counts as not visible yet. How the
// layout makes a change visible (refresh, the hot table's feed) does not
// matter: only the public API is used.
func userFreshnessRun(ctx context.Context, cfg Config, bc backend.Config, icfg indexer.Config, locations map[int64]catalog.GeoPoint, versions map[int64]int64, deleted map[int64]bool, k layout.Kind) (freshness, error) {
	acfg := app.Defaults()
	acfg.API.Addr = "127.0.0.1:0"
	acfg.Backends = bc
	acfg.Indexer = icfg
	acfg.Indexer.Layouts = []layout.Kind{k}
	acfg.Indexer.Log.Prefix += "fresh-" + string(k) + ":"
	srvCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- app.Run(srvCtx, acfg, nil, func(a string) { addrc <- a }) }()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		return freshness{}, fmt.Errorf("indexbench: freshness server (%s): %w", k, err)
	}
	defer func() { stopServer(); <-done }()
	client := &http.Client{Timeout: 10 * time.Second}

	src := catalog.NewEventStream(cfg.Seed, cfg.Shops)
	perTick := max(1, cfg.FreshnessRate*int(postTick/time.Millisecond)/1000)
	ticks := (cfg.FreshnessEvents + perTick - 1) / perTick
	bar := bench.NewProgress(cfg.Log, fmt.Sprintf("freshness run (%s, POST /v1/events → GET /v1/search, open loop)", k), int64(ticks))
	defer bar.Done()
	follow := bench.FollowConfig{Interval: postTick, Issues: ticks, Limit: followLimit, MinPoll: followMinPoll, MaxLooks: followLooks}
	return bench.FollowOpenLoop(ctx, follow, func(ctx context.Context, tick int) (bench.Look, error) {
		defer bar.Add(1)
		batch := make([]catalog.Event, 0, perTick)
		for len(batch) < perTick {
			ev := src.Next()
			if !ev.IsHotShopUpdate() || ev.ID > int64(cfg.Shops) || deleted[ev.ID] {
				continue
			}
			versions[ev.ID]++
			ev.Version = versions[ev.ID]
			batch = append(batch, ev)
		}
		if err := postEvents(ctx, client, addr, batch); err != nil {
			return nil, err
		}
		if tick%followEvery != 0 {
			return nil, nil
		}
		ev := batch[len(batch)-1]
		loc := locations[ev.ID]
		q := url.Values{"lat": {ftoa(loc.Lat)}, "lon": {ftoa(loc.Lon)}, "sort": {"distance"}, "size": {"5"}, "layout": {string(k)}}
		searchURL := "http://" + addr + "/v1/search?" + q.Encode()
		return func(ctx context.Context) (bool, error) {
			seen, err := shopVersion(ctx, client, searchURL, ev.ID)
			return seen >= ev.Version, err
		}, nil
	})
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// postEvents posts a batch to POST /v1/events and wants 202.
func postEvents(ctx context.Context, client *http.Client, addr string, events []catalog.Event) error {
	body, err := json.Marshal(events)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/events", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("indexbench: POST /v1/events: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("indexbench: POST /v1/events answered %d: %s", resp.StatusCode, msg)
	}
	return nil
}

// shopVersion runs one search and returns the version the answer shows for
// shop id (0 when it is not among the hits, or the answer is a 503).
func shopVersion(ctx context.Context, client *http.Client, searchURL string, id int64) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, searchURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("indexbench: freshness search: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		io.Copy(io.Discard, resp.Body)
		return 0, nil
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("indexbench: freshness search answered %d: %s", resp.StatusCode, msg)
	}
	var out struct {
		Shops []struct {
			ID      int64 `json:"id"`
			Version int64 `json:"version"`
		} `json:"shops"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, fmt.Errorf("indexbench: freshness search answer: %w", err)
	}
	for _, s := range out.Shops {
		if s.ID == id {
			return s.Version, nil
		}
	}
	return 0, nil
}
