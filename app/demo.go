package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/layout"
)

// demoProgressInterval is how often `up` prints how far each layout's
// indexer is through the demo catalog.
const demoProgressInterval = 5 * time.Second

// reportDemoIndexing tells the user of `up` when the demo catalog can be
// searched: until every layout's indexer has applied it, a search finds
// only part of it (0 shops for 치킨 on one layout, 78 on another, in the
// first minutes on a 2-core machine). Once the catalog is in the event log
// (loaded) and the indexed layouts are known (indexed), it prints each
// layout's progress through the entries appended so far, every
// demoProgressInterval when it moved, then one line when all are through.
// It never fails the server: a read it cannot make is logged and tried
// again.
func reportDemoIndexing(ctx context.Context, evlog *eventlog.Log, loaded <-chan struct{}, indexed <-chan []layout.Kind, refresh time.Duration, w io.Writer, log *slog.Logger) {
	var kinds []layout.Kind
	for loaded != nil || kinds == nil {
		select {
		case <-ctx.Done():
			return
		case <-loaded:
			loaded = nil
		case kinds = <-indexed:
		}
	}
	if len(kinds) == 0 {
		return // no layout is indexed on this cluster (logged where decided)
	}
	start := time.Now()
	catalog, err := evlog.Appended(ctx)
	for err != nil {
		log.Warn("demo progress: cannot read the event log", "err", err)
		if !sleep(ctx, demoProgressInterval) {
			return
		}
		catalog, err = evlog.Appended(ctx)
	}
	last := ""
	for {
		processed := make(map[layout.Kind][]int64, len(kinds))
		for _, k := range kinds {
			if processed[k], err = evlog.Processed(ctx, indexer.GroupName(k)); err != nil {
				log.Warn("demo progress: cannot read the event log", "layout", k, "err", err)
				break
			}
		}
		if err == nil {
			line, done := demoProgressLine(kinds, catalog, processed)
			if done {
				// Applied is searchable after the next refresh.
				if !sleep(ctx, refresh) {
					return
				}
				fmt.Fprintf(w, "demo: the catalog is searchable in every layout (%s), %s after it was loaded\n",
					kindList(kinds), time.Since(start).Round(time.Second))
				return
			}
			if line != last { // a stalled indexer does not fill the screen
				fmt.Fprintln(w, line)
				last = line
			}
		}
		if !sleep(ctx, demoProgressInterval) {
			return
		}
	}
}

// demoProgressLine says how many of the catalog's entries (per partition)
// each layout has processed, and whether every layout has processed them
// all.
func demoProgressLine(kinds []layout.Kind, catalog []int64, processed map[layout.Kind][]int64) (string, bool) {
	var total int64
	for _, n := range catalog {
		total += n
	}
	parts := make([]string, len(kinds))
	done := true
	for i, k := range kinds {
		var through int64
		for p, n := range catalog {
			if p < len(processed[k]) {
				through += min(processed[k][p], n)
			}
		}
		done = done && through == total
		pct := int64(100)
		if total > 0 {
			pct = 100 * through / total // rounded down: 100% only when through
		}
		parts[i] = fmt.Sprintf("%s %d/%d (%d%%)", k, through, total, pct)
	}
	return "demo: indexing the catalog's events: " + strings.Join(parts, ", ") +
		"; until every layout is through, searches find part of the catalog", done
}

func kindList(kinds []layout.Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// longestRefresh is the longest refresh interval of the indices: how long
// an applied change may take to be searchable. An index that never
// refreshes by itself (-1) counts as 1 s.
func longestRefresh(c layout.Config) time.Duration {
	longest := time.Second
	for _, s := range []layout.IndexSettings{c.Nested, c.Shops, c.Menus, c.HotShops, c.HotMenus} {
		if d, err := time.ParseDuration(s.RefreshInterval); err == nil {
			longest = max(longest, d)
		}
	}
	return longest
}
