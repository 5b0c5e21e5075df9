package feed

import (
	"math/rand/v2"
	"sync"
	"time"
)

const (
	// idEpochMillis is 2025-01-01T00:00:00Z; 41 bits of milliseconds after
	// it last until 2094.
	idEpochMillis = 1735689600000
	idSeqBits     = 12
	idSeqMask     = 1<<idSeqBits - 1
	// MaxPostID is the largest id the layout can hold (2^53 - 1).
	MaxPostID = 1<<53 - 1
)

// IDGenerator hands out post ids that grow with time: (ms since 2025-01-01)
// << 12 | sequence. Within one process ids are strictly increasing, even when
// the clock steps back. Across processes two ids can collide only in the same
// millisecond; each millisecond's sequence starts at a random value in
// 0..2047 to make that rare, and the insert retries with a new id on a
// primary-key conflict.
type IDGenerator struct {
	mu     sync.Mutex
	now    func() time.Time
	lastMs int64
	seq    int64
}

// NewIDGenerator returns a generator reading the given clock (time.Now if nil).
func NewIDGenerator(now func() time.Time) *IDGenerator {
	if now == nil {
		now = time.Now
	}
	return &IDGenerator{now: now, lastMs: -1}
}

// Next returns a new id, larger than every id this generator returned before.
func (g *IDGenerator) Next() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := g.now().UnixMilli() - idEpochMillis
	if ms < 0 {
		ms = 0
	}
	switch {
	case ms > g.lastMs:
		g.lastMs = ms
		g.seq = rand.Int64N(idSeqMask/2 + 1)
	default: // the same millisecond, or the clock went back: stay monotonic
		g.seq++
		if g.seq > idSeqMask {
			g.lastMs++
			g.seq = 0
		}
	}
	return g.lastMs<<idSeqBits | g.seq
}

// PostIDAt returns the id of the seq-th post of millisecond t; seeding uses it
// to give historical posts ids that sort by their time.
func PostIDAt(t time.Time, seq int) int64 {
	ms := t.UnixMilli() - idEpochMillis
	if ms < 0 {
		ms = 0
	}
	return ms<<idSeqBits | int64(seq&idSeqMask)
}

// PostTime returns the millisecond a post id was generated in.
func PostTime(id int64) time.Time {
	return time.UnixMilli(id>>idSeqBits + idEpochMillis).UTC()
}
