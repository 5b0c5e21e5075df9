package feed

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// celebrityGuessUsers bounds the users whose followed celebrities a service
// remembers (two generations of this many; a few tens of bytes each).
const celebrityGuessUsers = 100_000

// celebrityGuesses remembers, per user, the celebrities the user followed at
// their last hybrid read, so the next read asks for those celebrities' recent
// posts in the same pipeline as the timeline (readPage). A guess is only a
// guess: every read checks it against Redis and corrects it, so it needs no
// invalidation.
type celebrityGuesses struct {
	mu    sync.Mutex
	users generations[int64, []string] // sorted celebrity ids, shared: never modified
}

func newCelebrityGuesses() *celebrityGuesses {
	return &celebrityGuesses{users: newGenerations[int64, []string](celebrityGuessUsers)}
}

func (g *celebrityGuesses) get(user int64) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	celebs, _ := g.users.get(user)
	return celebs
}

func (g *celebrityGuesses) put(user int64, celebs []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.users.put(user, celebs)
}

// readPage returns the post ids of one page of a hybrid feed: the limit
// newest distinct ids of the user's timeline and of the recent posts of the
// celebrities the user follows, newest first, below before (0: from the
// newest).
//
// It is one read through the batcher (readCommands), so concurrent reads
// share a pipeline: the timeline range, the celebrities the user follows
// (SINTER of the celebrity set and the user's followees) and the ranges of
// the celebrities the user followed at the last read (celebrityGuesses).
// Only when the guess missed a celebrity (a first read, a new follow, an
// author who became a celebrity) does a second read fetch the missing
// ranges. It replaced a read-only Lua script doing the same reads: Redis
// 7.0 spent 15.6 µs per EVALSHA_RO, 3.5 of them in its three commands, and
// its CPU per read at 50 concurrent clients went from 18–23 to 12–13 µs.
//
// The commands are not one snapshot: a post or a follow landing between them
// may show in one list and not yet in another, as with any two reads. Each
// list is read atomically and only ever gains newer ids, so a page never
// loses a post it showed before unless the post was removed (unfollow, trim).
func (s *Service) readPage(ctx context.Context, user, before int64, limit int) ([]int64, error) {
	rng := idRange(before, limit)
	guess := s.celebrities.get(user)
	knownVersion, known, loaded := s.known.get()
	var timeline *redis.StringSliceCmd
	var version *redis.SliceCmd
	var followed *redis.BoolSliceCmd
	guessed := make([]*redis.StringSliceCmd, len(guess))
	err := readCommands(ctx, s, func(ctx context.Context, c redis.Cmdable) []redis.Cmder {
		cmds := make([]redis.Cmder, 0, 3+len(guess))
		timeline = c.ZRevRangeByScore(ctx, s.keys.timeline(user), rng)
		// MGET of one key: a missing counter is a nil, not a redis.Nil
		// error that would fail the batch (or count against a replica).
		version = c.MGet(ctx, s.copies.versionKey(user))
		cmds = append(cmds, timeline, version)
		if len(known) > 0 {
			followed = c.SMIsMember(ctx, s.keys.followees(user), stringsToAny(known)...)
			cmds = append(cmds, followed)
		}
		for i, celeb := range guess {
			guessed[i] = c.ZRevRangeByScore(ctx, s.copies.postKey(s.keys.authorPrefix+celeb, user), rng)
			cmds = append(cmds, guessed[i])
		}
		return cmds
	})
	if err != nil {
		return nil, fmt.Errorf("feed: read page of %d: %w", user, err)
	}
	own, err := parseIDs(timeline.Val())
	if err != nil {
		return nil, err
	}
	var celebs []string
	if loaded && versionOf(version) == knownVersion {
		if followed != nil {
			celebs = followedOf(known, followed.Val())
		}
	} else if celebs, err = s.followedCelebrities(ctx, user, versionOf(version)); err != nil {
		return nil, fmt.Errorf("feed: read page of %d: %w", user, err)
	}
	if len(celebs) == 0 && len(guess) == 0 {
		return own, nil // no celebrities: the timeline range is the page
	}
	if !slices.Equal(celebs, guess) {
		s.celebrities.put(user, celebs)
	}

	// The guessed ranges of celebrities the user follows count; the ranges
	// of the others the guess missed are read now.
	lists := [][]int64{own}
	var missing []string
	for _, celeb := range celebs {
		j, found := slices.BinarySearch(guess, celeb)
		if !found {
			missing = append(missing, celeb)
			continue
		}
		ids, err := parseIDs(guessed[j].Val())
		if err != nil {
			return nil, err
		}
		lists = append(lists, ids)
	}
	if len(missing) > 0 {
		pulled, err := s.readRanges(ctx, user, missing, rng)
		if err != nil {
			return nil, fmt.Errorf("feed: read page of %d: %w", user, err)
		}
		lists = append(lists, pulled...)
	}
	return mergeNewest(lists, limit), nil
}

// followedCelebrities loads the celebrity set again (the version the user's
// copy holds, seen, differs from the one this process loaded it with) and
// asks which of them the user follows: the slow path of readPage, two more
// round trips. A copy behind the loaded version is raised (hotcopies.go).
func (s *Service) followedCelebrities(ctx context.Context, user int64, seen string) ([]string, error) {
	version, celebs, err := s.loadCelebrities(ctx)
	if err == nil && seen != version {
		err = s.raiseVersionCopies(ctx, version, s.copies.versionKey(user))
	}
	if err != nil || len(celebs) == 0 {
		return nil, err
	}
	cmd, err := readCommand(ctx, s, func(ctx context.Context, c redis.Cmdable) *redis.BoolSliceCmd {
		return c.SMIsMember(ctx, s.keys.followees(user), stringsToAny(celebs)...)
	})
	if err != nil {
		return nil, fmt.Errorf("feed: which of %d celebrities %d follows: %w", len(celebs), user, err)
	}
	return followedOf(celebs, cmd.Val()), nil
}

// readRanges reads the recent post ids of celebrities in rng, newest first,
// from the user's copies, as one read through the batcher.
func (s *Service) readRanges(ctx context.Context, user int64, authors []string, rng *redis.ZRangeBy) ([][]int64, error) {
	ranges := make([]*redis.StringSliceCmd, len(authors))
	err := readCommands(ctx, s, func(ctx context.Context, c redis.Cmdable) []redis.Cmder {
		cmds := make([]redis.Cmder, len(authors))
		for i, a := range authors {
			ranges[i] = c.ZRevRangeByScore(ctx, s.copies.postKey(s.keys.authorPrefix+a, user), rng)
			cmds[i] = ranges[i]
		}
		return cmds
	})
	if err != nil {
		return nil, err
	}
	lists := make([][]int64, len(ranges))
	for i, r := range ranges {
		if lists[i], err = parseIDs(r.Val()); err != nil {
			return nil, err
		}
	}
	return lists, nil
}

// knownCelebrities is this process's copy of the celebrity set with the
// version it had (keys.celebritiesVersion: a number that every change
// raises to at least the changer's clock in µs, so a version deleted with
// the rest of the state and created again does not repeat an old one). A
// hybrid read checks
// the version in its pipeline and asks Redis which of these the user follows
// (SMISMEMBER on the user's followee set): one key, so one slot on a Redis
// Cluster, where the SINTER of the global celebrity set with the followee
// set would span two. When the version moved, the read loads the set again.
type knownCelebrities struct {
	mu      sync.Mutex
	loaded  bool
	version string // "" when Redis has no version yet
	members []string
}

func newKnownCelebrities() *knownCelebrities { return &knownCelebrities{} }

// get returns the known version and members; ok is false before the first
// load.
func (k *knownCelebrities) get() (version string, members []string, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.version, k.members, k.loaded
}

// put remembers a version and its members. Two loads racing may leave the
// older: the next read sees the version differ and loads again.
func (k *knownCelebrities) put(version string, members []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.loaded, k.version, k.members = true, version, members
}

// forget drops the copy (the state was deleted).
func (k *knownCelebrities) forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.loaded, k.version, k.members = false, "", nil
}

// celebrityChangeScript adds (ARGV[1] "add") or removes ("rem") the ids
// ARGV[3..] to or from the celebrity set KEYS[1] and, when the set changed,
// raises its version KEYS[2] to max(version+1, ARGV[2]), atomically: a
// reader that sees a version sees the set of that version. It returns the
// version (0 when there is none). Both keys hash to one slot (see keys).
var celebrityChangeScript = redis.NewScript(`
local n
if ARGV[1] == 'add' then n = redis.call('SADD', KEYS[1], unpack(ARGV, 3)) else n = redis.call('SREM', KEYS[1], unpack(ARGV, 3)) end
local v = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if n > 0 then
  local t = tonumber(ARGV[2])
  if t <= v then t = v + 1 end
  v = t
  redis.call('SET', KEYS[2], string.format('%.0f', v))
end
return string.format('%.0f', v)`)

// changeCelebrities adds or removes authors from the celebrity set (op
// "add" or "rem"), raising its version when it changed. With hot-key
// copies, authors joining the set get their posts' copies first, and the
// version's copies are raised after (hotcopies.go).
func (s *Service) changeCelebrities(ctx context.Context, rc redis.Scripter, op string, ids ...any) error {
	if len(ids) == 0 {
		return nil
	}
	if op == "add" && s.copies.enabled() {
		joining, err := s.notCelebrities(ctx, ids)
		if err != nil || len(joining) == 0 {
			return err
		}
		if err := s.fillCelebrityPostCopies(ctx, joining); err != nil {
			return err
		}
		ids = stringsToAny(joining)
	}
	args := append([]any{op, strconv.FormatInt(time.Now().UnixMicro(), 10)}, ids...)
	version, err := celebrityChangeScript.Run(ctx, rc, []string{s.keys.celebrities, s.keys.celebritiesVersion}, args...).Text()
	if err != nil {
		return fmt.Errorf("feed: %s %d celebrities (%s, %s): %w", op, len(ids), s.keys.celebrities, s.keys.celebritiesVersion, err)
	}
	return s.raiseVersionCopies(ctx, version)
}

// notCelebrities returns the ids (strings) that are not in the celebrity set.
func (s *Service) notCelebrities(ctx context.Context, ids []any) ([]string, error) {
	member, err := s.rdb.SMIsMember(ctx, s.keys.celebrities, ids...).Result()
	if err != nil {
		return nil, fmt.Errorf("feed: which of %d authors are celebrities: %w", len(ids), err)
	}
	var out []string
	for i, m := range member {
		if !m {
			out = append(out, fmt.Sprint(ids[i]))
		}
	}
	return out, nil
}

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// loadCelebrities reads the celebrity set and its version in one
// MULTI/EXEC (one slot), sorted, and remembers them.
func (s *Service) loadCelebrities(ctx context.Context) (string, []string, error) {
	var members *redis.StringSliceCmd
	var version *redis.SliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		members = pipe.SMembers(ctx, s.keys.celebrities)
		version = pipe.MGet(ctx, s.keys.celebritiesVersion)
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("feed: read the celebrity set %s and its version: %w", s.keys.celebrities, err)
	}
	v := versionOf(version)
	celebs := members.Val()
	slices.Sort(celebs)
	s.known.put(v, celebs)
	return v, celebs, nil
}

// versionOf reads the version token from the MGET of its key; a missing
// one is "".
func versionOf(cmd *redis.SliceCmd) string {
	vals := cmd.Val()
	if len(vals) != 1 {
		return ""
	}
	str, _ := vals[0].(string)
	return str
}

// followedOf returns the members of celebs (sorted) whose SMISMEMBER
// answer is true.
func followedOf(celebs []string, member []bool) []string {
	var out []string
	for i, ok := range member {
		if ok && i < len(celebs) {
			out = append(out, celebs[i])
		}
	}
	return out
}
