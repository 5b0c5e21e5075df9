package eventlog

import (
	"context"
	"fmt"
	"strings"
)

// Appended returns how many entries have ever been appended to each
// partition (XINFO STREAM's entries-added, which trimming does not lower);
// 0 for a partition whose stream does not exist yet.
func (l *Log) Appended(ctx context.Context) ([]int64, error) {
	out := make([]int64, l.cfg.Partitions)
	for p := range out {
		info, err := l.rdb.XInfoStream(ctx, l.StreamKey(p)).Result()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") {
				continue
			}
			return nil, fmt.Errorf("eventlog: XINFO STREAM %s: %w", l.StreamKey(p), err)
		}
		out[p] = info.EntriesAdded
	}
	return out, nil
}

// Processed returns how many entries of each partition group has taken and
// acknowledged: its entries-read (XINFO GROUPS) less its pending entries.
// Pending entries are nearly always the newest read, so on a partition
// whose entries up to n were appended before any still pending,
// Processed >= n means group is done with them. 0 where the group does not
// exist yet.
func (l *Log) Processed(ctx context.Context, group string) ([]int64, error) {
	out := make([]int64, l.cfg.Partitions)
	for p := range out {
		groups, err := l.rdb.XInfoGroups(ctx, l.StreamKey(p)).Result()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") {
				continue
			}
			return nil, fmt.Errorf("eventlog: XINFO GROUPS %s: %w", l.StreamKey(p), err)
		}
		for _, g := range groups {
			if g.Name == group {
				out[p] = max(0, g.EntriesRead-g.Pending)
			}
		}
	}
	return out, nil
}
