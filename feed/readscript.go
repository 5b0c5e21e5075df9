package feed

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// readScript assembles one page of a push or hybrid feed inside Redis, so a
// read costs one round trip instead of three (timeline and celebrities;
// their recent posts; the payloads). It is read-only and runs with
// EVALSHA_RO / EVAL_RO, so it runs on read replicas too.
//
//	KEYS[1]  the user's timeline
//	KEYS[2]  the celebrity set, KEYS[3] the user's followees (hybrid only)
//	ARGV[1]  the largest score wanted: "+inf" or "(" .. before
//	ARGV[2]  limit
//	ARGV[3]  the author key prefix, ARGV[4] the payload key prefix
//
// It returns {ids, payloads}: the limit newest distinct post ids of the
// timeline and of the recent posts of the celebrities the user follows, newest
// first, and their payloads (nil where missing), exactly what feedIDsFrom and
// an MGET return. The author and payload keys are built in the script, not
// passed in KEYS: fine on one server and its replicas, not on Redis Cluster.
var readScript = redis.NewScript(`
local max, limit = ARGV[1], tonumber(ARGV[2])
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], max, '-inf', 'LIMIT', 0, limit)
if #KEYS == 3 then
	local celebs = redis.call('SINTER', KEYS[2], KEYS[3])
	if #celebs > 0 then
		local lists = {ids}
		for _, c in ipairs(celebs) do
			lists[#lists + 1] = redis.call('ZREVRANGEBYSCORE', ARGV[3] .. c, max, '-inf', 'LIMIT', 0, limit)
		end
		-- Merge the lists (each newest first) by numeric id; ids up to
		-- 2^53 are exact in a Lua number. Equal ids meet at the heads.
		local nums, heads = {}, {}
		for i, l in ipairs(lists) do
			local n = {}
			for j, m in ipairs(l) do n[j] = tonumber(m) end
			nums[i], heads[i] = n, 1
		end
		local merged, last = {}, nil
		while #merged < limit do
			local best, bestv = 0, -1
			for i = 1, #nums do
				local v = nums[i][heads[i]]
				if v ~= nil and v > bestv then best, bestv = i, v end
			end
			if best == 0 then break end
			if bestv ~= last then
				merged[#merged + 1] = lists[best][heads[best]]
				last = bestv
			end
			heads[best] = heads[best] + 1
		end
		ids = merged
	end
end
if #ids == 0 then return {ids, {}} end
local keys = {}
for i, id in ipairs(ids) do keys[i] = ARGV[4] .. id end
return {ids, redis.call('MGET', unpack(keys))}
`)

// readPage runs readScript for a push or hybrid feed through s.read and
// returns the page's post ids and the values of their payload keys.
func (s *Service) readPage(ctx context.Context, user, before int64, limit int) (ids []int64, vals []any, err error) {
	keys := []string{s.keys.timeline(user)}
	if s.cfg.Strategy == StrategyHybrid {
		keys = append(keys, s.keys.celebrities, s.keys.followees(user))
	}
	maxScore := "+inf"
	if before > 0 {
		maxScore = "(" + strconv.FormatInt(before, 10)
	}
	var reply []any
	err = s.read(ctx, func(ctx context.Context, rc redis.Cmdable) error {
		var err error
		reply, err = readScript.RunRO(ctx, rc, keys, maxScore, limit, s.keys.authorPrefix, s.keys.postPrefix).Slice()
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("feed: read page of %d: %w", user, err)
	}
	if len(reply) != 2 {
		return nil, nil, fmt.Errorf("feed: read page of %d: script replied %d values, want 2", user, len(reply))
	}
	members, ok1 := reply[0].([]any)
	vals, ok2 := reply[1].([]any)
	if !ok1 || !ok2 || len(vals) != len(members) {
		return nil, nil, fmt.Errorf("feed: read page of %d: script replied %T and %T", user, reply[0], reply[1])
	}
	ids = make([]int64, len(members))
	for i, m := range members {
		str, _ := m.(string)
		if ids[i], err = strconv.ParseInt(str, 10, 64); err != nil {
			return nil, nil, fmt.Errorf("feed: timeline member %q is not a post id: %w", str, err)
		}
	}
	return ids, vals, nil
}
