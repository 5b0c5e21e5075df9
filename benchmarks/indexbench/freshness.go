package indexbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baedal/baedal/app"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/layout"
)

// freshness is one layout's freshness run: the POST → visible times of the
// sampled events, and how many were never seen.
type freshness struct {
	rec    *bench.LatencyRecorder
	gaveUp int64
}

// Each sampled event gets a probe that searches until it sees the event.
// maxProbes bounds the probes at once, so that their searches stay a small
// load beside the indexing they measure; probePoll is the pause between two
// searches of one probe. A sample is thus late by up to one search plus
// probePoll (about 25 ms on the 2-core machine), as it would be for a user
// who searches again and again.
const (
	maxProbes    = 2
	probePoll    = 10 * time.Millisecond
	probeTimeout = 30 * time.Second
)

// userFreshnessRun measures freshness as a user sees it: it starts a baedal
// server (app.Run, its own indexer worker running layout k only, on an event
// log of its own), posts hot shop updates to its POST /v1/events at
// cfg.FreshnessRate, and for a sample of them records the time from the
// start of the POST to the first answer of GET /v1/search?layout=k (sorted
// by distance from the shop, so the shop is among the first hits) that
// shows the shop at the event's version or newer. A 503 (the layout is not
// ready) counts as not visible yet.
func userFreshnessRun(ctx context.Context, cfg Config, bc backend.Config, icfg indexer.Config, locations map[int64]catalog.GeoPoint, versions map[int64]int64, deleted map[int64]bool, k layout.Kind) (freshness, error) {
	f := freshness{rec: bench.NewLatencyRecorder()}
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
		return f, fmt.Errorf("indexbench: freshness server (%s): %w", k, err)
	}
	defer func() { stopServer(); <-done }()
	client := &http.Client{Timeout: 10 * time.Second}

	var (
		probes   sync.WaitGroup
		inflight atomic.Int32
		gaveUp   atomic.Int64
		errMu    sync.Mutex
		probeErr error
	)
	probe := func(ev catalog.Event, posted time.Time) {
		defer probes.Done()
		defer inflight.Add(-1)
		loc := locations[ev.ID]
		q := url.Values{"lat": {ftoa(loc.Lat)}, "lon": {ftoa(loc.Lon)}, "sort": {"distance"}, "size": {"5"}, "layout": {string(k)}}
		for {
			seen, err := shopVersion(ctx, client, "http://"+addr+"/v1/search?"+q.Encode(), ev.ID)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				errMu.Lock()
				probeErr = errors.Join(probeErr, err)
				errMu.Unlock()
				return
			case seen >= ev.Version:
				f.rec.Record(time.Since(posted))
				return
			case time.Since(posted) > probeTimeout:
				gaveUp.Add(1)
				return
			}
			time.Sleep(probePoll)
		}
	}

	src := catalog.NewEventStream(cfg.Seed, cfg.Shops)
	bar := bench.NewProgress(cfg.Log, fmt.Sprintf("freshness run (%s, POST /v1/events → GET /v1/search)", k), int64(cfg.FreshnessEvents))
	const tick = 20 * time.Millisecond
	perTick := max(1, cfg.FreshnessRate*int(tick/time.Millisecond)/1000)
	t := time.NewTicker(tick)
	defer t.Stop()
	for sent := 0; sent < cfg.FreshnessEvents; {
		batch := make([]catalog.Event, 0, perTick)
		for len(batch) < perTick && sent+len(batch) < cfg.FreshnessEvents {
			ev := src.Next()
			if !ev.IsHotShopUpdate() || ev.ID > int64(cfg.Shops) || deleted[ev.ID] {
				continue
			}
			versions[ev.ID]++
			ev.Version = versions[ev.ID]
			batch = append(batch, ev)
		}
		posted := time.Now()
		if err := postEvents(ctx, client, addr, batch); err != nil {
			probes.Wait()
			return f, err
		}
		if len(batch) > 0 && inflight.Load() < maxProbes {
			inflight.Add(1)
			probes.Add(1)
			go probe(batch[len(batch)-1], posted)
		}
		sent += len(batch)
		bar.Add(int64(len(batch)))
		select {
		case <-ctx.Done():
			probes.Wait()
			return f, ctx.Err()
		case <-t.C:
		}
	}
	bar.Done()
	probes.Wait()
	f.gaveUp = gaveUp.Load()
	return f, probeErr
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
