package feed

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// readScript reads the post ids of one page of a hybrid feed inside Redis,
// so it costs one round trip instead of two (timeline and celebrities; their
// recent posts). It is read-only and runs with EVALSHA_RO / EVAL_RO, so it
// runs on read replicas too.
//
//	KEYS[1]  the user's timeline
//	KEYS[2]  the celebrity set, KEYS[3] the user's followees
//	ARGV[1]  the largest score wanted: "+inf" or "(" .. before
//	ARGV[2]  limit
//	ARGV[3]  the author key prefix
//
// It returns one string: the limit newest ids of the timeline, then for each
// celebrity the user follows the limit newest ids of their recent posts, each
// list newest first, ids separated by ',' and lists by ';' (parseIDLists).
// readPage merges them in Go. Redis does as little as it can: the payloads
// come from the post cache (hydrate), not through Lua; converting ids to Lua
// numbers for a merge in the script (tonumber) cost Redis more than the
// reads; and one string is cheaper to build and to parse than a reply of one
// bulk string per id. The author keys are built in the script, not passed in
// KEYS: fine on one server and its replicas, not on Redis Cluster.
var readScript = redis.NewScript(`
local max, limit = ARGV[1], ARGV[2]
local out = {table.concat(redis.call('ZREVRANGEBYSCORE', KEYS[1], max, '-inf', 'LIMIT', 0, limit), ',')}
for _, c in ipairs(redis.call('SINTER', KEYS[2], KEYS[3])) do
	out[#out + 1] = table.concat(redis.call('ZREVRANGEBYSCORE', ARGV[3] .. c, max, '-inf', 'LIMIT', 0, limit), ',')
end
return table.concat(out, ';')
`)

// readPage runs readScript for a hybrid feed through s.read, batched with
// concurrent reads (readCommand: EVALSHA_RO, then EVAL_RO after NOSCRIPT, as
// redis.Script.RunRO does), and returns the page's post ids: the limit newest
// distinct ids of the user's timeline and of the celebrities the user
// follows, newest first, as feedIDsFrom returns them.
func (s *Service) readPage(ctx context.Context, user, before int64, limit int) ([]int64, error) {
	keys := []string{s.keys.timeline(user), s.keys.celebrities, s.keys.followees(user)}
	maxScore := "+inf"
	if before > 0 {
		maxScore = "(" + strconv.FormatInt(before, 10)
	}
	cmd, err := readCommand(ctx, s, func(ctx context.Context, c redis.Cmdable) *redis.Cmd {
		return readScript.EvalShaRO(ctx, c, keys, maxScore, limit, s.keys.authorPrefix)
	}, func(ctx context.Context, c redis.Cmdable) *redis.Cmd {
		return readScript.EvalRO(ctx, c, keys, maxScore, limit, s.keys.authorPrefix)
	})
	if err != nil {
		return nil, fmt.Errorf("feed: read page of %d: %w", user, err)
	}
	reply, err := cmd.Text()
	if err != nil {
		return nil, fmt.Errorf("feed: read page of %d: %w", user, err)
	}
	lists, err := parseIDLists(reply)
	if err != nil {
		return nil, fmt.Errorf("feed: read page of %d: %w", user, err)
	}
	if len(lists) == 1 {
		return lists[0], nil // no celebrities: the timeline range is the page
	}
	return mergeNewest(lists, limit), nil
}

// parseIDLists parses readScript's reply: lists separated by ';' of decimal
// post ids separated by ','; an empty list is an empty string. The lists
// share one backing array. It returns at least one list.
func parseIDLists(s string) ([][]int64, error) {
	n := 1 + strings.Count(s, ";")
	ids := n + strings.Count(s, ",")
	all := make([]int64, 0, ids)
	lists := make([][]int64, 0, n)
	start := 0   // index in all of the current list's first id
	var id int64 // the id being read
	digits := 0  // its digits so far
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if digits == 18 { // 10^18 > MaxPostID: longer is no post id
				return nil, fmt.Errorf("id list %.80q: an id is too long", s)
			}
			id = id*10 + int64(s[i]-'0')
			digits++
			continue
		}
		if i < len(s) && s[i] != ',' && s[i] != ';' {
			return nil, fmt.Errorf("id list %.80q: unexpected %q", s, s[i])
		}
		endOfList := i == len(s) || s[i] == ';'
		switch {
		case digits > 0:
			all = append(all, id)
		case !endOfList || len(all) > start:
			// An empty id: only a whole empty list may be empty.
			return nil, fmt.Errorf("id list %.80q: empty id", s)
		}
		id, digits = 0, 0
		if endOfList {
			lists = append(lists, all[start:len(all):len(all)])
			start = len(all)
		}
	}
	return lists, nil
}
