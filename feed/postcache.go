package feed

import (
	"encoding/json"
	"sync"
)

// postCache keeps validated post payloads in memory, so a read takes them
// from the process instead of from Redis. Posts are never edited or deleted
// and a payload copies its author's name and picture at posting time, so a
// payload checked once against its id stays right forever: the cache needs
// no invalidation, only a bound on its memory.
//
// It holds two generations: new entries go into cur; when cur reaches max
// entries it becomes old and a new cur starts (the previous old is dropped).
// A hit in old is copied into cur, so payloads read often survive every
// rotation. It never holds more than 2·max entries.
//
// The cached payloads are shared by every reader: nobody may modify them.
type postCache struct {
	mu       sync.Mutex
	max      int
	cur, old map[int64]json.RawMessage
}

// newPostCache returns a cache of up to 2·max entries, or nil (no cache) when
// max < 1. A nil *postCache is valid: it finds nothing and keeps nothing.
func newPostCache(max int) *postCache {
	if max < 1 {
		return nil
	}
	return &postCache{max: max, cur: make(map[int64]json.RawMessage)}
}

// lookup fills out[i] with the cached payload of ids[i] where there is one
// and returns how many it found. out must be as long as ids.
func (c *postCache) lookup(ids []int64, out []json.RawMessage) int {
	if c == nil {
		return 0
	}
	found := 0
	c.mu.Lock()
	for i, id := range ids {
		p, ok := c.cur[id]
		if !ok {
			if p, ok = c.old[id]; !ok {
				continue
			}
			c.putLocked(id, p)
		}
		out[i] = p
		found++
	}
	c.mu.Unlock()
	return found
}

// add caches payloads[i] as the payload of ids[i], skipping nil ones. Every
// payload must be a checked encoding of its post (checkPayload) that nobody
// modifies afterwards.
func (c *postCache) add(ids []int64, payloads []json.RawMessage) {
	if c == nil {
		return
	}
	c.mu.Lock()
	for i, p := range payloads {
		if p != nil {
			c.putLocked(ids[i], p)
		}
	}
	c.mu.Unlock()
}

// putLocked adds one entry to cur, rotating the generations first when cur
// is full. c.mu must be held.
func (c *postCache) putLocked(id int64, p json.RawMessage) {
	if len(c.cur) >= c.max {
		c.old, c.cur = c.cur, make(map[int64]json.RawMessage, c.max)
	}
	c.cur[id] = p
}

// len returns the number of entries in both generations (an id in both
// counts twice).
func (c *postCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}

// reset drops every entry (after Rebuild or DeleteRedisState, whose data may
// come from a database that was seeded again).
func (c *postCache) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.cur, c.old = make(map[int64]json.RawMessage), nil
	c.mu.Unlock()
}
