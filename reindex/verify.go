package reindex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
)

// DocSum is the checksum of one document: its external version (_version,
// the shop aggregate's event version) and a 64-bit FNV-1a hash of its
// canonical _source (object keys sorted, numbers as written).
type DocSum struct {
	Version int64  `json:"version"`
	Hash    uint64 `json:"hash"`
}

// Mismatch is one document whose checksums differ between source and
// target. A side without the document has Missing set on that side.
type Mismatch struct {
	ID            string `json:"id"`
	Reason        string `json:"reason"`
	SourceVersion int64  `json:"source_version,omitempty"`
	TargetVersion int64  `json:"target_version,omitempty"`
	SourceHash    string `json:"source_hash,omitempty"`
	TargetHash    string `json:"target_hash,omitempty"`
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s (%s: source v%d %s, target v%d %s)", m.ID, m.Reason, m.SourceVersion, m.SourceHash, m.TargetVersion, m.TargetHash)
}

// The reasons of a Mismatch.
const (
	ReasonMissingInTarget = "missing in target" // in the source only
	ReasonOnlyInTarget    = "only in target"    // e.g. a deleted shop copied back
	ReasonVersion         = "version differs"
	ReasonContent         = "content differs at the same version"
)

// CanonicalHash hashes a _source independently of its key order and
// whitespace: the copy keeps the bytes the indexer wrote, a replay writes
// them again with Go's encoder; both must hash alike. A hot head
// tombstone's deleted_at is left out.
func CanonicalHash(source []byte) (uint64, error) {
	dec := json.NewDecoder(bytes.NewReader(source))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, fmt.Errorf("reindex: decode _source for its checksum: %w", err)
	}
	if m, ok := v.(map[string]any); ok && m["deleted"] == true {
		// A hot head tombstone's deleted_at is when a writer wrote it (it
		// starts the retention), not the shop's content: the same delete
		// written by the copy and by the catch-up is the same document.
		delete(m, "deleted_at")
	}
	canon, err := json.Marshal(v) // map keys sorted, json.Number kept as written
	if err != nil {
		return 0, fmt.Errorf("reindex: encode _source for its checksum: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write(canon)
	return h.Sum64(), nil
}

// CompareSums returns the documents whose checksums differ, sorted by id.
// A document present on both sides with equal version and hash matches.
func CompareSums(source, target map[string]DocSum) []Mismatch {
	var out []Mismatch
	for id, s := range source {
		t, ok := target[id]
		switch {
		case !ok:
			out = append(out, Mismatch{ID: id, Reason: ReasonMissingInTarget, SourceVersion: s.Version, SourceHash: hashString(s.Hash)})
		case s.Version != t.Version:
			out = append(out, mismatchOf(id, ReasonVersion, s, t))
		case s.Hash != t.Hash:
			out = append(out, mismatchOf(id, ReasonContent, s, t))
		}
	}
	for id, t := range target {
		if _, ok := source[id]; !ok {
			out = append(out, Mismatch{ID: id, Reason: ReasonOnlyInTarget, TargetVersion: t.Version, TargetHash: hashString(t.Hash)})
		}
	}
	slices.SortFunc(out, func(a, b Mismatch) int { return compareIDs(a.ID, b.ID) })
	return out
}

func mismatchOf(id, reason string, s, t DocSum) Mismatch {
	return Mismatch{ID: id, Reason: reason, SourceVersion: s.Version, TargetVersion: t.Version, SourceHash: hashString(s.Hash), TargetHash: hashString(t.Hash)}
}

func hashString(h uint64) string { return strconv.FormatUint(h, 16) }

// compareIDs orders numeric ids numerically, others as strings.
func compareIDs(a, b string) int {
	ai, errA := strconv.ParseInt(a, 10, 64)
	bi, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		switch {
		case ai < bi:
			return -1
		case ai > bi:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}

// scanSums reads the checksum of every document of index with a scroll
// (sorted by _doc, 1,000 per page). It holds one DocSum per document in
// memory (~50 bytes each: 50 MB for a million shops).
func scanSums(ctx context.Context, osc *osapi.Client, index string) (map[string]DocSum, error) {
	type page struct {
		ScrollID string `json:"_scroll_id"`
		Hits     struct {
			Hits []struct {
				ID      string          `json:"_id"`
				Version int64           `json:"_version"`
				Source  json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	body := []byte(`{"size":1000,"version":true,"sort":["_doc"],"query":{"match_all":{}}}`)
	var p page
	if err := osc.Do(ctx, http.MethodPost, "/"+index+"/_search?scroll=2m", body, &p); err != nil {
		return nil, fmt.Errorf("reindex: scan checksums of %s: %w", index, err)
	}
	out := map[string]DocSum{}
	defer func() {
		if p.ScrollID != "" {
			clear, _ := json.Marshal(map[string]any{"scroll_id": p.ScrollID})
			_ = osc.Do(context.WithoutCancel(ctx), http.MethodDelete, "/_search/scroll", clear, nil)
		}
	}()
	for len(p.Hits.Hits) > 0 {
		for _, h := range p.Hits.Hits {
			sum, err := CanonicalHash(h.Source)
			if err != nil {
				return nil, fmt.Errorf("%s document %s: %w", index, h.ID, err)
			}
			out[h.ID] = DocSum{Version: h.Version, Hash: sum}
		}
		next, _ := json.Marshal(map[string]any{"scroll": "2m", "scroll_id": p.ScrollID})
		p.Hits.Hits = nil
		if err := osc.Do(ctx, http.MethodPost, "/_search/scroll", next, &p); err != nil {
			return nil, fmt.Errorf("reindex: scan checksums of %s (%d read): %w", index, len(out), err)
		}
	}
	return out, nil
}

// getSums reads the current checksums of some documents with a realtime
// _mget (absent documents are not in the result).
func getSums(ctx context.Context, osc *osapi.Client, index string, ids []string) (map[string]DocSum, error) {
	out := map[string]DocSum{}
	for start := 0; start < len(ids); start += 1000 {
		body, _ := json.Marshal(map[string]any{"ids": ids[start:min(start+1000, len(ids))]})
		var resp struct {
			Docs []struct {
				ID      string          `json:"_id"`
				Found   bool            `json:"found"`
				Version int64           `json:"_version"`
				Source  json.RawMessage `json:"_source"`
				Error   json.RawMessage `json:"error"`
			} `json:"docs"`
		}
		if err := osc.Do(ctx, http.MethodPost, "/"+index+"/_mget?realtime=true", body, &resp); err != nil {
			return nil, fmt.Errorf("reindex: read checksums of %d documents of %s: %w", len(ids), index, err)
		}
		for _, d := range resp.Docs {
			if len(d.Error) > 0 {
				return nil, fmt.Errorf("reindex: read document %s of %s: %s", d.ID, index, truncate(string(d.Error), 300))
			}
			if !d.Found {
				continue
			}
			sum, err := CanonicalHash(d.Source)
			if err != nil {
				return nil, fmt.Errorf("%s document %s: %w", index, d.ID, err)
			}
			out[d.ID] = DocSum{Version: d.Version, Hash: sum}
		}
	}
	return out, nil
}

// maxReportedMismatches caps the mismatches stored in the job (the count is
// exact).
const maxReportedMismatches = 100

// verify compares the checksum of every document of the source and the
// target, after the catch-up and before the swap. Writes continue meanwhile:
// the live indexer writes the source; nobody but the catch-up writes the
// target. A full scan of both yields candidates; each re-check round then
// decides them exactly:
//
//  1. a catch-up pass replays the log into the target up to P, so the
//     target holds, for every shop, exactly the events up to P;
//  2. it waits (up to VerifyWait) for the live indexer to acknowledge every
//     entry up to P, then reads its frontier F, so the source holds every
//     event up to F (written and acknowledged: a realtime get sees it);
//  3. it reads both sides of the candidates (realtime _mget), then the
//     log's end E;
//  4. a candidate that still differs is explained if its shop has an event
//     in (min(F, P), E]: one side may hold it and the other not yet. It is
//     re-checked in the next round. Otherwise both sides must hold the same
//     events of that shop, so the difference is a mismatch.
//
// The job refuses to swap on any mismatch (it fails with the differing
// documents; the alias stays on the source). Differences still explained
// after VerifyRounds rounds (a shop updated during every round) are counted
// as explained, not verified; the dual-write applies their newer events.
func (o *Orchestrator) verify(ctx context.Context, st Status, fields map[string]string) (Step, error) {
	if err := o.checkTarget(ctx, st, fields); err != nil {
		return "", err
	}
	o.phase(st.ID, "verifying")
	start := time.Now()
	for _, idx := range []string{st.Source, st.Target} {
		if err := refresh(ctx, o.os, idx); err != nil {
			return "", err
		}
	}
	srcSums, err := scanSums(ctx, o.os, st.Source)
	if err != nil {
		return "", err
	}
	tgtSums, err := scanSums(ctx, o.os, st.Target)
	if err != nil {
		return "", err
	}
	total := len(srcSums)
	for id := range tgtSums {
		if _, ok := srcSums[id]; !ok {
			total++
		}
	}
	candidates := CompareSums(srcSums, tgtSums)
	srcSums, tgtSums = nil, nil
	o.log.Info("verification scan", "job", st.ID, "documents", total, "differing", len(candidates))
	from, err := positions(fields, fStart)
	if err != nil {
		return "", err
	}
	var mismatches []Mismatch
	for round := 1; len(candidates) > 0 && len(mismatches) == 0 && round <= o.cfg.VerifyRounds; round++ {
		var explained []Mismatch
		if explained, mismatches, err = o.recheck(ctx, st, from, candidates); err != nil {
			return "", err
		}
		o.log.Info("verification re-check", "job", st.ID, "round", round, "re-checked", len(candidates),
			"explained_by_newer_events", len(explained), "mismatched", len(mismatches))
		candidates = explained
	}
	report := mismatches[:min(len(mismatches), maxReportedMismatches)]
	raw, _ := json.Marshal(report)
	verified := total - len(mismatches) - len(candidates)
	if err := o.store.set(ctx, st.ID, fCompared, total, fVerified, verified, fMismatched, len(mismatches), fMismatches, raw, fExplained, len(candidates),
		fTimings+"verify", strconv.FormatFloat(time.Since(start).Seconds(), 'f', 3, 64)); err != nil {
		return "", err
	}
	if len(mismatches) > 0 {
		shown := make([]string, 0, 10)
		for _, m := range mismatches[:min(len(mismatches), 10)] {
			shown = append(shown, m.String())
		}
		return "", fmt.Errorf("%w: %d of %d documents differ between %s and %s with no newer event to explain it, e.g. %s; the alias stays on %s",
			ErrMismatch, len(mismatches), total, st.Source, st.Target, strings.Join(shown, "; "), st.Source)
	}
	return StepVerified, nil
}

// recheck runs one re-check round (see verify) over the candidates and
// splits those that still differ into explained ones and mismatches.
func (o *Orchestrator) recheck(ctx context.Context, st Status, from []string, candidates []Mismatch) (explained, mismatches []Mismatch, err error) {
	r, err := o.newReplayer(ctx, st, st.Target, "fwd")
	if err != nil {
		return nil, nil, err
	}
	now, err := o.store.fields(ctx, st.ID)
	if err != nil {
		return nil, nil, err
	}
	caughtUp := r.cursors(now, from)
	if _, err := r.pass(ctx, caughtUp); err != nil {
		return nil, nil, err
	}
	if err := o.waitLiveAcked(ctx, st, caughtUp); err != nil {
		o.log.Warn("verification: the live indexer did not reach the catch-up position; judging with its frontier", "job", st.ID, "err", err)
	}
	frontier, err := replayStart(ctx, o.evlog, kindOf(st.Role))
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(candidates))
	for i, m := range candidates {
		ids[i] = m.ID
	}
	s, err := getSums(ctx, o.os, st.Source, ids)
	if err != nil {
		return nil, nil, err
	}
	t, err := getSums(ctx, o.os, st.Target, ids)
	if err != nil {
		return nil, nil, err
	}
	end, err := o.logEnds(ctx)
	if err != nil {
		return nil, nil, err
	}
	lower := make([]string, len(end))
	for p := range lower {
		lower[p] = earlier(frontier[p], caughtUp[p])
	}
	touched, err := o.shopsWithEvents(ctx, lower, end)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range CompareSums(s, t) {
		if touched[m.ID] {
			explained = append(explained, m)
		} else {
			mismatches = append(mismatches, m)
		}
	}
	return explained, mismatches, nil
}

// earlier returns the smaller of two stream ids (a when either is invalid).
func earlier(a, b string) string {
	ia, errA := ParseStreamID(a)
	ib, errB := ParseStreamID(b)
	if errA == nil && errB == nil && ib.Less(ia) {
		return b
	}
	return a
}

// shopsWithEvents returns the ids (decimal, as document ids) of the shops
// with an entry in (after[p], upTo[p]] of some partition p.
func (o *Orchestrator) shopsWithEvents(ctx context.Context, after, upTo []string) (map[string]bool, error) {
	out := map[string]bool{}
	for p := range after {
		stream := o.evlog.StreamKey(p)
		cursor := after[p]
		for {
			msgs, err := o.rdb.XRangeN(ctx, stream, "("+cursor, upTo[p], 1000).Result()
			if err != nil {
				return nil, fmt.Errorf("reindex: XRANGE %s (%s, %s]: %w", stream, cursor, upTo[p], err)
			}
			for _, m := range msgs {
				raw, _ := m.Values[entryEventField].(string)
				evs, err := catalog.ParseEvents([]byte(raw))
				if err != nil {
					continue // the indexers dead-letter it: it changes no document
				}
				for _, ev := range evs {
					out[strconv.FormatInt(ev.AggregateID(), 10)] = true
				}
			}
			if len(msgs) < 1000 {
				break
			}
			cursor = msgs[len(msgs)-1].ID
		}
	}
	return out, nil
}

// ErrMismatch is a verification that found documents differing between the
// source and the target; the job refuses to swap.
var ErrMismatch = fmt.Errorf("reindex: verification failed")

// waitLiveAcked waits up to VerifyWait until the live indexer's consumer
// group acknowledged every entry up to the given positions.
func (o *Orchestrator) waitLiveAcked(ctx context.Context, st Status, upTo []string) error {
	deadline := time.Now().Add(o.cfg.VerifyWait)
	for {
		front, err := replayStart(ctx, o.evlog, kindOf(st.Role))
		if err != nil {
			return err
		}
		if reached(front, upTo) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("live indexer frontier %v has not reached %v in %s", front, upTo, o.cfg.VerifyWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// reached reports whether every position of have is at or after want's.
func reached(have, want []string) bool {
	for p := range want {
		h, err1 := ParseStreamID(have[p])
		w, err2 := ParseStreamID(want[p])
		if err1 != nil || err2 != nil || h.Less(w) {
			return false
		}
	}
	return true
}
