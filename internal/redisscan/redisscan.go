// Package redisscan holds what every package that walks its own Redis keys
// needs, on a single Redis or a Redis Cluster alike: the nodes a SCAN must
// visit and the escaping of a key prefix for SCAN MATCH.
//
// Invariant: Nodes returns every master of a cluster (a SCAN on one node
// sees only that node's slots), and the client itself otherwise.
package redisscan

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Nodes returns the nodes on which a SCAN sees every key: each master of a
// Redis Cluster, or rdb itself.
func Nodes(ctx context.Context, rdb redis.Cmdable) ([]redis.Cmdable, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return []redis.Cmdable{rdb}, nil
	}
	var mu sync.Mutex
	var nodes []redis.Cmdable
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, m)
		return nil
	})
	return nodes, err
}

// EscapeGlob escapes the glob characters of s for SCAN MATCH.
func EscapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
