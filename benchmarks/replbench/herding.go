package replbench

import (
	"slices"
	"time"
)

// herdWindow is the window in which herding is judged: one CFS period,
// the time in which a replica capped by a CPU quota (ReplicaCPUPercent)
// either keeps up with its reads or is stopped until the next period.
const herdWindow = 100 * time.Millisecond

// herding follows, over a side's rounds, the reads that every client
// process together started on each replica: in each window, the
// most-loaded replica and its share. Independent selectors that chase the
// same replica show as top shares well over a third (with 3 replicas)
// and as the top replica moving from one to another.
type herding struct {
	tops             []float64
	topSum           [timelineBuckets]float64
	topCount         [timelineBuckets]int
	moves, herdMoves int
	seconds          float64
	window           time.Duration
}

// add adds one round of duration d sampled every step (sampleChosen).
func (h *herding) add(chosen [][]uint64, step, d time.Duration) {
	per := max(1, int((herdWindow+step-1)/step))
	h.window = time.Duration(per) * step
	prevTop, prevShare := -1, 0.0
	for first := 0; first < len(chosen); first += per {
		var counts []uint64
		for _, s := range chosen[first:min(first+per, len(chosen))] {
			for len(counts) < len(s) {
				counts = append(counts, 0)
			}
			for r, n := range s {
				counts[r] += n
			}
		}
		var total, most uint64
		top := -1
		for r, n := range counts {
			total += n
			if top < 0 || n > most {
				top, most = r, n
			}
		}
		if total == 0 {
			prevTop = -1 // no reads: no herd to follow across the gap
			continue
		}
		share := float64(most) / float64(total)
		h.tops = append(h.tops, share)
		b := tenthOf(first, step, d)
		h.topSum[b] += share
		h.topCount[b]++
		if prevTop >= 0 && top != prevTop {
			h.moves++
			if share > 0.5 && prevShare > 0.5 {
				h.herdMoves++
			}
		}
		prevTop, prevShare = top, share
	}
	h.seconds += d.Seconds()
}

// Herding is how the reads of every client process together piled on one
// replica, window by window (WindowMs, about one CFS period).
type Herding struct {
	WindowMs float64 `json:"window_ms"`
	Windows  int     `json:"windows"`
	// TopShare* are the most-loaded replica's share of a window's reads:
	// mean, median, 90th percentile and max over the windows (1/3 is an
	// even spread over 3 replicas, 1 every read on one).
	TopShareMean float64 `json:"top_share_mean"`
	TopShareP50  float64 `json:"top_share_p50"`
	TopShareP90  float64 `json:"top_share_p90"`
	TopShareMax  float64 `json:"top_share_max"`
	// OverHalf is the fraction of windows in which one replica took more
	// than half of the reads.
	OverHalf float64 `json:"windows_over_half"`
	// TopMovesPerS is how often per second the most-loaded replica was a
	// different one than in the window before; HerdMovesPerS counts only
	// the moves between two windows that were both over half: a herd that
	// went from one replica to another.
	TopMovesPerS  float64 `json:"top_moves_per_s"`
	HerdMovesPerS float64 `json:"herd_moves_per_s"`
	// TopShareByTenth is the mean top share in each tenth of a round.
	TopShareByTenth []float64 `json:"top_share_by_tenth"`
}

// summary returns the herding figures, nil when nothing was read.
func (h *herding) summary() *Herding {
	if len(h.tops) == 0 {
		return nil
	}
	sorted := slices.Sorted(slices.Values(h.tops))
	at := func(q float64) float64 { return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)] }
	var sum float64
	over := 0
	for _, s := range sorted {
		sum += s
		if s > 0.5 {
			over++
		}
	}
	out := &Herding{
		WindowMs: round3(float64(h.window) / float64(time.Millisecond)), Windows: len(sorted),
		TopShareMean: round3(sum / float64(len(sorted))), TopShareP50: round3(at(0.5)), TopShareP90: round3(at(0.9)), TopShareMax: round3(sorted[len(sorted)-1]),
		OverHalf: round3(float64(over) / float64(len(sorted))),
	}
	if h.seconds > 0 {
		out.TopMovesPerS, out.HerdMovesPerS = round3(float64(h.moves)/h.seconds), round3(float64(h.herdMoves)/h.seconds)
	}
	for b := range timelineBuckets {
		v := 0.0
		if h.topCount[b] > 0 {
			v = round3(h.topSum[b] / float64(h.topCount[b]))
		}
		out.TopShareByTenth = append(out.TopShareByTenth, v)
	}
	return out
}
