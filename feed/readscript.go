package feed

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// readScript reads the post ids of one page of a hybrid feed inside Redis,
// so it costs one round trip instead of two (timeline and celebrities; their
// recent posts). The payloads come from the post cache (hydrate), not from
// the script: passing them through Lua cost Redis several times the reads
// themselves. It is read-only and runs with EVALSHA_RO / EVAL_RO, so it runs
// on read replicas too.
//
//	KEYS[1]  the user's timeline
//	KEYS[2]  the celebrity set, KEYS[3] the user's followees
//	ARGV[1]  the largest score wanted: "+inf" or "(" .. before
//	ARGV[2]  limit
//	ARGV[3]  the author key prefix
//
// It returns the limit newest distinct post ids of the timeline and of the
// recent posts of the celebrities the user follows, newest first, exactly
// what feedIDsFrom returns. The author keys are built in the script, not
// passed in KEYS: fine on one server and its replicas, not on Redis Cluster.
var readScript = redis.NewScript(`
local max, limit = ARGV[1], tonumber(ARGV[2])
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], max, '-inf', 'LIMIT', 0, limit)
local celebs = redis.call('SINTER', KEYS[2], KEYS[3])
if #celebs == 0 then return ids end
local lists = {ids}
for _, c in ipairs(celebs) do
	lists[#lists + 1] = redis.call('ZREVRANGEBYSCORE', ARGV[3] .. c, max, '-inf', 'LIMIT', 0, limit)
end
-- Merge the lists (each newest first) by numeric id; ids up to 2^53 are
-- exact in a Lua number. Equal ids meet at the heads.
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
return merged
`)

// readPage runs readScript for a hybrid feed through s.read and returns the
// page's post ids.
func (s *Service) readPage(ctx context.Context, user, before int64, limit int) ([]int64, error) {
	keys := []string{s.keys.timeline(user), s.keys.celebrities, s.keys.followees(user)}
	maxScore := "+inf"
	if before > 0 {
		maxScore = "(" + strconv.FormatInt(before, 10)
	}
	var members []string
	err := s.read(ctx, func(ctx context.Context, rc redis.Cmdable) error {
		var err error
		members, err = readScript.RunRO(ctx, rc, keys, maxScore, limit, s.keys.authorPrefix).StringSlice()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("feed: read page of %d: %w", user, err)
	}
	return parseIDs(members)
}
