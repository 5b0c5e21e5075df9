package indexer

import (
	"container/list"
	"sync"
)

// stateCache is an LRU of held shop states, bounded by entries. Stored
// states are never modified (see ShopParts), so Get hands out the pointer.
type stateCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used; values are *cacheEntry
	items map[int64]*list.Element
}

type cacheEntry struct {
	shopID int64
	state  *ShopParts
}

func newStateCache(maxEntries int) *stateCache {
	return &stateCache{max: maxEntries, order: list.New(), items: make(map[int64]*list.Element)}
}

func (c *stateCache) Get(shopID int64) (*ShopParts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[shopID]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).state, true
}

func (c *stateCache) Put(shopID int64, st *ShopParts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[shopID]; ok {
		el.Value.(*cacheEntry).state = st
		c.order.MoveToFront(el)
		return
	}
	c.items[shopID] = c.order.PushFront(&cacheEntry{shopID: shopID, state: st})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).shopID)
	}
}

func (c *stateCache) Remove(shopID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[shopID]; ok {
		c.order.Remove(el)
		delete(c.items, shopID)
	}
}

func (c *stateCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Clear drops every held state.
func (c *stateCache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.items)
}
