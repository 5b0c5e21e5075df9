package feed

import (
	"encoding/json"
	"sync"
)

// generations is a map whose size is bounded by two generations: new
// entries go into cur; when cur reaches max entries it becomes old and a new
// cur starts (the previous old is dropped). A hit in old is copied into cur,
// so entries read often survive every rotation. It never holds more than
// 2·max entries. It is not safe for concurrent use.
type generations[K comparable, V any] struct {
	max      int
	cur, old map[K]V
}

func newGenerations[K comparable, V any](max int) generations[K, V] {
	return generations[K, V]{max: max, cur: make(map[K]V)}
}

// get returns k's value.
func (g *generations[K, V]) get(k K) (V, bool) {
	v, ok := g.cur[k]
	if !ok {
		if v, ok = g.old[k]; ok {
			g.put(k, v)
		}
	}
	return v, ok
}

// put sets k's value, rotating the generations first when cur is full.
func (g *generations[K, V]) put(k K, v V) {
	if len(g.cur) >= g.max {
		g.old, g.cur = g.cur, make(map[K]V, g.max)
	}
	g.cur[k] = v
}

// len returns the number of entries in both generations (a key in both
// counts twice).
func (g *generations[K, V]) len() int { return len(g.cur) + len(g.old) }

// reset drops every entry.
func (g *generations[K, V]) reset() { g.cur, g.old = make(map[K]V), nil }

// postCache keeps validated post payloads in memory, so a read takes them
// from the process instead of from Redis. Posts are never edited or deleted
// and a payload copies its author's name and picture at posting time, so a
// payload checked once against its id stays right forever: the cache needs
// no invalidation, only a bound on its memory (two generations of max
// entries).
//
// The cached payloads are shared by every reader: nobody may modify them.
type postCache struct {
	mu       sync.Mutex
	payloads generations[int64, json.RawMessage]
}

// newPostCache returns a cache of up to 2·max entries, or nil (no cache) when
// max < 1. A nil *postCache is valid: it finds nothing and keeps nothing.
func newPostCache(max int) *postCache {
	if max < 1 {
		return nil
	}
	return &postCache{payloads: newGenerations[int64, json.RawMessage](max)}
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
		if p, ok := c.payloads.get(id); ok {
			out[i] = p
			found++
		}
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
			c.payloads.put(ids[i], p)
		}
	}
	c.mu.Unlock()
}

// len returns the number of entries in both generations (an id in both
// counts twice).
func (c *postCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.payloads.len()
}

// reset drops every entry (after Rebuild or DeleteRedisState, whose data may
// come from a database that was seeded again).
func (c *postCache) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.payloads.reset()
	c.mu.Unlock()
}
