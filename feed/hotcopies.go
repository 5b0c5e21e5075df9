package feed

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/redisslot"
)

// Hot-key copies (Redis Cluster).
//
// Every hybrid read reads the celebrity set's version, and every follower of
// a celebrity reads the celebrity's recent posts: on a cluster those keys
// live in one slot each, so the master serving that slot takes a share of
// all reads (on the generated data, where every user follows the
// celebrity, the largest master served 1.9 times the commands of the
// smallest). With Config.HotKeyCopies = K > 1 both are written K times,
// under names chosen so that copy i hashes into the i-th of K equal ranges
// of the 16,384 slots, and user u reads copy u mod K. Masters that own equal
// contiguous slot ranges (what redis-cli --cluster create assigns) then
// serve equal shares when K is a multiple of their number; the default 12
// covers 1, 2, 3, 4, 6 and 12 masters.
//
// The version copies are kept by a monotonic protocol, so that no reader
// uses a celebrity set older than the last completed change:
//   - the version is a number: the change script sets it to max(previous+1,
//     the changer's clock in µs), so it only grows, also across a deletion of
//     the state (the clock has moved on);
//   - a change runs the script (set and version, one slot), then raises
//     every copy to the script's version with a compare-and-raise script
//     (copyRaiseScript: a copy never goes down);
//   - a reader uses its loaded set only when its copy equals the version it
//     loaded with the set; otherwise it loads the set again (MULTI of the set
//     and the version), and raises its copy if the copy is behind.
//
// So after a change completes every copy is at least its version, and a
// reader holding an older set sees its copy differ. A changer that dies
// between the script and the copies leaves copies behind the version: a
// reader that loaded the set before the change keeps it until the next
// change, a reader's fresh load of the set raises its copy, and a worker's
// start (ReconcileCelebrities) raises them all.
//
// The post copies hold what the author's own list (au:<author>) holds, for
// celebrities only: a promotion fills them from the author's list before the
// author joins the set, publish writes them beside the author's list when
// the author is in the set (one SMISMEMBER more per publish), and the
// fan-out job of a
// post its worker found pulled writes them too (with WAIT, when
// configured), before the post's outbox row goes. A post published while
// its author is being promoted reaches the copies when its job runs; until
// then readers find it in no copy (its job would have pushed it had it
// started before the promotion). A demoted celebrity's copies stay, capped
// like its list, and are filled again at its next promotion.

// defaultClusterHotKeyCopies is HotKeyCopies's default on a Redis Cluster.
const defaultClusterHotKeyCopies = 12

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = redisslot.Count

// clusterSlot returns the hash slot of key (redisslot.Of).
func clusterSlot(key string) int { return redisslot.Of(key) }

// spreadNames returns k key names derived from base (base~n), the i-th
// hashing into the i-th of k equal slot ranges. k = 1 returns base itself.
// A base whose hash tag fixes the slot (a prefix with braces) cannot be
// spread: its copies keep the first candidate names.
func spreadNames(base string, k int) []string {
	if k <= 1 {
		return []string{base}
	}
	names := make([]string, k)
	found := 0
	const tries = 1 << 16
	for n := 0; n < tries && found < k; n++ {
		name := base + "~" + strconv.Itoa(n)
		i := clusterSlot(name) * k / slotCount
		if names[i] == "" {
			names[i] = name
			found++
		}
	}
	for i, n := range names {
		if n == "" {
			names[i] = base + "~x" + strconv.Itoa(i)
		}
	}
	return names
}

// hotCopies names and caches the copies of one deployment's hot keys.
type hotCopies struct {
	k       int
	version []string // copies of keys.celebritiesVersion
	mu      sync.Mutex
	posts   map[string][]string // author's list key -> its copies
}

// newHotCopies names k copies; k = 1 reads the version itself.
func newHotCopies(k int, version, versionCopyBase string) *hotCopies {
	h := &hotCopies{k: k, version: []string{version}, posts: map[string][]string{}}
	if k > 1 {
		h.version = spreadNames(versionCopyBase, k)
	}
	return h
}

// enabled reports whether keys are copied (K > 1).
func (h *hotCopies) enabled() bool { return h.k > 1 }

// versionKey is the version copy user reads.
func (h *hotCopies) versionKey(user int64) string { return h.version[copyOf(user, h.k)] }

// postKeys returns the copies of an author's list key (the key itself when
// copies are off).
func (h *hotCopies) postKeys(authorKey string) []string {
	if !h.enabled() {
		return []string{authorKey}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	names, ok := h.posts[authorKey]
	if !ok {
		names = spreadNames(authorKey, h.k)
		if len(h.posts) >= celebrityGuessUsers { // bound: celebrities are few
			clear(h.posts)
		}
		h.posts[authorKey] = names
	}
	return names
}

// postKey is the copy of an author's list user reads.
func (h *hotCopies) postKey(authorKey string, user int64) string {
	if !h.enabled() {
		return authorKey
	}
	return h.postKeys(authorKey)[copyOf(user, h.k)]
}

func copyOf(user int64, k int) int {
	i := user % int64(k)
	if i < 0 {
		i += int64(k)
	}
	return int(i)
}

// copyRaiseScript sets KEYS[1] to ARGV[1] unless it holds a number at
// least as large: a version copy only goes up.
var copyRaiseScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tonumber(ARGV[1]) > cur then redis.call('SET', KEYS[1], ARGV[1]) return 1 end
return 0`)

// raiseVersionCopies raises the version copies to version (all of them when
// only is empty).
func (s *Service) raiseVersionCopies(ctx context.Context, version string, only ...string) error {
	if !s.copies.enabled() || version == "" {
		return nil
	}
	keys := only
	if len(keys) == 0 {
		keys = s.copies.version
	}
	// Eval, not EvalSha: a pipeline cannot fall back on NOSCRIPT, and the
	// script is short.
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, k := range keys {
			copyRaiseScript.Eval(ctx, pipe, []string{k}, version)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("feed: raise %d copies of the celebrity set's version to %s: %w", len(keys), version, err)
	}
	return nil
}

// fillCelebrityPostCopies copies the authors' lists into their copies:
// before authors join the celebrity set, and at a worker's start.
func (s *Service) fillCelebrityPostCopies(ctx context.Context, authors []string) error {
	if !s.copies.enabled() || len(authors) == 0 {
		return nil
	}
	lists := make([]*redis.ZSliceCmd, len(authors))
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, a := range authors {
			lists[i] = pipe.ZRangeWithScores(ctx, s.keys.authorPrefix+a, 0, -1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("feed: read the recent posts of %d new celebrities: %w", len(authors), err)
	}
	_, err = s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, a := range authors {
			posts := lists[i].Val()
			if len(posts) == 0 {
				continue
			}
			for _, key := range s.copies.postKeys(s.keys.authorPrefix + a) {
				pipe.ZAdd(ctx, key, posts...)
				pipe.ZRemRangeByRank(ctx, key, 0, int64(-s.cfg.AuthorPostsCap-1))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("feed: copy the recent posts of %d new celebrities: %w", len(authors), err)
	}
	return nil
}

// repairHotCopies fills the post copies of celebrities (have: the set;
// want: those joining it) that miss one, and raises the version's copies
// to the version: at a worker's start, after an upgrade or a changer that
// died mid-change.
func (s *Service) repairHotCopies(ctx context.Context, have []string, want []int64) error {
	if !s.copies.enabled() {
		return nil
	}
	celebs := slices.Clone(have)
	for _, id := range want {
		if a := strconv.FormatInt(id, 10); !slices.Contains(celebs, a) {
			celebs = append(celebs, a)
		}
	}
	exists := make([][]*redis.IntCmd, len(celebs))
	var version *redis.SliceCmd
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		version = pipe.MGet(ctx, s.keys.celebritiesVersion)
		for i, a := range celebs {
			for _, key := range s.copies.postKeys(s.keys.authorPrefix + a) {
				exists[i] = append(exists[i], pipe.Exists(ctx, key))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("feed: check the copies of %d celebrities: %w", len(celebs), err)
	}
	var missing []string
	for i, a := range celebs {
		for _, e := range exists[i] {
			if e.Val() == 0 {
				missing = append(missing, a)
				break
			}
		}
	}
	if err := s.fillCelebrityPostCopies(ctx, missing); err != nil {
		return err
	}
	return s.raiseVersionCopies(ctx, versionOf(version))
}
