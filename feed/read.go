package feed

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Page is one page of a feed, newest first. NextBefore, when not zero, is
// the cursor of the next (older) page.
type Page struct {
	Posts      []Post `json:"posts"`
	NextBefore int64  `json:"nextBefore,omitempty"`
}

// RawPage is a Page whose posts are still their stored JSON payloads, each
// the encoding of a Post with the layout scanPayload checks, shared with the
// post cache (read-only). The HTTP handlers write them into responses without
// decoding them.
type RawPage struct {
	Posts      []json.RawMessage
	NextBefore int64
}

// pullChunk bounds the commands of one pull pipeline.
const pullChunk = 2000

// Feed returns up to limit posts of the user's feed older than the post id
// before (0: from the newest), assembled by the configured strategy. It is
// FeedRaw with the payloads decoded.
func (s *Service) Feed(ctx context.Context, user, before int64, limit int) (Page, error) {
	raw, err := s.FeedRaw(ctx, user, before, limit)
	if err != nil {
		return Page{}, err
	}
	page := Page{NextBefore: raw.NextBefore}
	if len(raw.Posts) > 0 {
		page.Posts = make([]Post, len(raw.Posts))
	}
	for i, p := range raw.Posts {
		if err := json.Unmarshal(p, &page.Posts[i]); err != nil {
			return Page{}, fmt.Errorf("feed: decode payload %.100s: %w", p, err)
		}
	}
	return page, nil
}

// FeedRaw is Feed without decoding the posts' payloads. The payloads may be
// shared with the service's post cache: callers must not modify them.
func (s *Service) FeedRaw(ctx context.Context, user, before int64, limit int) (RawPage, error) {
	start := time.Now()
	if limit <= 0 {
		limit = s.cfg.DefaultPageSize
	}
	if limit > s.cfg.MaxPageSize {
		return RawPage{}, &InvalidError{Field: "limit", Detail: fmt.Sprintf("must be 1..%d, got %d", s.cfg.MaxPageSize, limit)}
	}
	if before < 0 {
		return RawPage{}, invalid("before", "must be a post id > 0, got %d", before)
	}
	var ids []int64
	var err error
	if s.cfg.Strategy == StrategyHybrid {
		ids, err = s.readPage(ctx, user, before, limit)
	} else {
		ids, err = s.feedIDs(ctx, user, before, limit)
	}
	if err != nil {
		return RawPage{}, err
	}
	posts, err := s.hydrate(ctx, ids)
	if err != nil {
		return RawPage{}, err
	}
	if len(posts) == 0 {
		// An empty feed is the only case that needs to know whether the user
		// exists; a non-empty one proves it.
		if err := requireUsers(ctx, s.db, user); err != nil {
			return RawPage{}, err
		}
	}
	page := RawPage{Posts: posts}
	if len(ids) == limit {
		page.NextBefore = ids[len(ids)-1]
	}
	s.metrics.readDuration.Observe(time.Since(start).Seconds())
	return page, nil
}

// feedIDs returns the newest post ids of a push or pull feed, below before.
// Push reads them with one ZREVRANGEBYSCORE, batched with concurrent reads
// (readCommand); pull with pipelined commands (pullIDs). Hybrid reads with
// readPage.
func (s *Service) feedIDs(ctx context.Context, user, before int64, limit int) (ids []int64, err error) {
	rng := idRange(before, limit)
	if s.cfg.Strategy == StrategyPush {
		cmd, err := readCommand(ctx, s, func(ctx context.Context, c redis.Cmdable) *redis.StringSliceCmd {
			return c.ZRevRangeByScore(ctx, s.keys.timeline(user), rng)
		})
		if err != nil {
			return nil, fmt.Errorf("feed: read timeline of %d: %w", user, err)
		}
		return parseIDs(cmd.Val())
	}
	err = s.read(ctx, func(ctx context.Context, rc redis.Cmdable) error {
		ids, err = s.pullIDs(ctx, rc, user, rng, limit)
		return err
	})
	return ids, err
}

// idRange is the score range of a page: the limit newest ids below before
// (0: from the newest).
func idRange(before int64, limit int) *redis.ZRangeBy {
	rng := &redis.ZRangeBy{Min: "-inf", Max: "+inf", Count: int64(limit)}
	if before > 0 {
		rng.Max = "(" + strconv.FormatInt(before, 10)
	}
	return rng
}

// pullIDs reads a pull feed's page on rc: the user's followees, then each
// one's recent posts in rng (pipelined), merged.
func (s *Service) pullIDs(ctx context.Context, rc redis.Cmdable, user int64, rng *redis.ZRangeBy, limit int) ([]int64, error) {
	followees, err := rc.SMembers(ctx, s.keys.followees(user)).Result()
	if err != nil {
		return nil, fmt.Errorf("feed: read followees of %d: %w", user, err)
	}
	lists, err := s.readAuthors(ctx, rc, followees, rng)
	if err != nil {
		return nil, err
	}
	return mergeNewest(lists, limit), nil
}

// readAuthors reads each author's recent post ids in the range, pipelined.
func (s *Service) readAuthors(ctx context.Context, rc redis.Cmdable, authors []string, rng *redis.ZRangeBy) ([][]int64, error) {
	lists := make([][]int64, 0, len(authors))
	for len(authors) > 0 {
		chunk := authors[:min(len(authors), pullChunk)]
		authors = authors[len(chunk):]
		pipe := rc.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(chunk))
		for i, a := range chunk {
			cmds[i] = pipe.ZRevRangeByScore(ctx, s.keys.authorPrefix+a, rng)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("feed: read recent posts of %d authors: %w", len(chunk), err)
		}
		for _, c := range cmds {
			ids, err := parseIDs(c.Val())
			if err != nil {
				return nil, err
			}
			if len(ids) > 0 {
				lists = append(lists, ids)
			}
		}
	}
	return lists, nil
}

// hydrate returns the payloads of the posts ids names, in order: from the
// post cache, the others from Redis (one MGET through s.read, so replicas
// serve it, batched with concurrent reads), and those still missing from PostgreSQL. A Redis value that is
// not the encoded Post of its id (missing, malformed, another post's) is
// replaced by the post from PostgreSQL; ids without a post anywhere are left
// out. What it reads is checked, then cached. The payloads may be shared with
// the cache: callers must not modify them.
func (s *Service) hydrate(ctx context.Context, ids []int64) ([]json.RawMessage, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out := make([]json.RawMessage, len(ids))
	hits := s.cache.lookup(ids, out)
	s.metrics.cacheHits.Add(float64(hits))
	if misses := len(ids) - hits; misses > 0 {
		s.metrics.cacheMisses.Add(float64(misses))
		if err := s.readPayloads(ctx, ids, out, misses); err != nil {
			return nil, err
		}
	}
	n := 0
	for _, p := range out {
		if p != nil {
			out[n] = p
			n++
		}
	}
	return out[:n], nil
}

// readPayloads fills the misses nil entries of out, the payloads of ids,
// from Redis and then PostgreSQL (see hydrate), and caches what it found.
func (s *Service) readPayloads(ctx context.Context, ids []int64, out []json.RawMessage, misses int) error {
	missing := make([]int64, 0, misses)
	keys := make([]string, 0, misses)
	for i, id := range ids {
		if out[i] == nil {
			missing = append(missing, id)
			keys = append(keys, s.keys.post(id))
		}
	}
	vals, err := s.readPayloadValues(ctx, keys)
	if err != nil {
		return err
	}
	if len(vals) != len(missing) {
		return fmt.Errorf("feed: %d payloads for %d post ids", len(vals), len(missing))
	}
	fresh := make([]json.RawMessage, len(missing))
	var fromDB []int64
	for i, id := range missing {
		str, _ := vals[i].(string)
		if p := json.RawMessage(str); str != "" && isPayloadOf(p, id) {
			fresh[i] = p
		} else {
			fromDB = append(fromDB, id)
		}
	}
	if len(fromDB) > 0 {
		loaded, err := s.loadPosts(ctx, fromDB)
		if err != nil {
			return err
		}
		byID := make(map[int64]json.RawMessage, len(loaded))
		for _, p := range loaded {
			enc, err := json.Marshal(p)
			if err != nil {
				return fmt.Errorf("feed: encode post %d: %w", p.ID, err)
			}
			byID[p.ID] = enc
		}
		for i, id := range missing {
			if fresh[i] == nil {
				fresh[i] = byID[id]
			}
		}
	}
	s.cache.add(missing, fresh)
	j := 0
	for i := range out {
		if out[i] == nil {
			out[i] = fresh[j]
			j++
		}
	}
	return nil
}

// readPayloadValues reads the payloads at keys, in order (nil where there
// is none), through the batcher: one MGET on a single Redis; on a Redis
// Cluster, where the keys hash to many slots, one GET per key in the same
// pipeline (the cluster client sends each node its GETs in one round trip;
// each is an MGET of one key, whose missing value is a nil, not a redis.Nil
// error failing the batch).
func (s *Service) readPayloadValues(ctx context.Context, keys []string) ([]any, error) {
	if !s.cluster {
		cmd, err := readCommand(ctx, s, func(ctx context.Context, c redis.Cmdable) *redis.SliceCmd {
			return c.MGet(ctx, keys...)
		})
		if err != nil {
			return nil, fmt.Errorf("feed: read %d post payloads: %w", len(keys), err)
		}
		return cmd.Val(), nil
	}
	gets := make([]*redis.SliceCmd, len(keys))
	err := readCommands(ctx, s, func(ctx context.Context, c redis.Cmdable) []redis.Cmder {
		cmds := make([]redis.Cmder, len(keys))
		for i, k := range keys {
			gets[i] = c.MGet(ctx, k)
			cmds[i] = gets[i]
		}
		return cmds
	})
	if err != nil {
		return nil, fmt.Errorf("feed: read %d post payloads: %w", len(keys), err)
	}
	vals := make([]any, len(keys))
	for i, g := range gets {
		if v := g.Val(); len(v) == 1 {
			vals[i] = v[0]
		}
	}
	return vals, nil
}

// isPayloadOf says whether p is the encoded Post with the given id.
func isPayloadOf(p json.RawMessage, id int64) bool {
	_, err := checkPayload(p, id)
	return err == nil
}

func parseIDs(members []string) ([]int64, error) {
	ids := make([]int64, len(members))
	for i, m := range members {
		id, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("feed: timeline member %q is not a post id: %w", m, err)
		}
		ids[i] = id
	}
	return ids, nil
}

// mergeNewest merges lists sorted newest first into the limit newest
// distinct ids, newest first. It costs O(limit · log(len(lists))).
func mergeNewest(lists [][]int64, limit int) []int64 {
	h := make(cursorHeap, 0, len(lists))
	for _, l := range lists {
		if len(l) > 0 {
			h = append(h, l)
		}
	}
	heap.Init(&h)
	out := make([]int64, 0, limit)
	for len(h) > 0 && len(out) < limit {
		id := h[0][0]
		if len(out) == 0 || out[len(out)-1] != id {
			out = append(out, id)
		}
		if h[0] = h[0][1:]; len(h[0]) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	return out
}

// cursorHeap is a max-heap of the heads of sorted (descending) id lists.
type cursorHeap [][]int64

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return h[i][0] > h[j][0] }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.([]int64)) }
func (h *cursorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
