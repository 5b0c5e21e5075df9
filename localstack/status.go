package localstack

import (
	"context"
	"strings"
	"sync"
)

// ComponentHealth is the state of one server of the stack.
type ComponentHealth struct {
	Component string `json:"component"`
	PID       int    `json:"pid"`
	Running   bool   `json:"running"`
	Healthy   bool   `json:"healthy"`
	Error     string `json:"error,omitempty"`
	Log       string `json:"log"`
}

// Health probes every recorded server once, in parallel.
func (st *State) Health(ctx context.Context) []ComponentHealth {
	out := make([]ComponentHealth, len(st.Processes))
	var wg sync.WaitGroup
	for i, p := range st.Processes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := ComponentHealth{Component: p.Component, PID: p.PID, Running: p.Alive(), Log: p.Log}
			if !h.Running {
				h.Error = "process is not running"
			} else if err := st.probe(ctx, p.Component); err != nil {
				h.Error = err.Error()
			} else {
				h.Healthy = true
			}
			out[i] = h
		}()
	}
	wg.Wait()
	return out
}

func (st *State) probe(ctx context.Context, component string) error {
	switch {
	case strings.HasPrefix(component, "opensearch-"):
		i := indexSuffix(component)
		return probeOpenSearch(ctx, st.OpenSearchURLs[i], len(st.OpenSearchURLs))
	case component == "redis":
		return probeRedis(ctx, st.RedisAddr, false)
	case component == "redis-links-old":
		return probeRedis(ctx, st.LinksOldRedisAddr, false)
	case strings.HasPrefix(component, "redis-replica-"):
		return probeRedis(ctx, st.RedisReplicaAddrs[indexSuffix(component)], true)
	case strings.HasPrefix(component, "redis-cluster-"):
		return probeRedisClusterNode(ctx, st.RedisClusterAddrs[indexSuffix(component)], len(st.RedisClusterAddrs))
	case component == "postgres":
		return probePostgres(ctx, st.PostgresURL)
	}
	return nil
}

// indexSuffix turns "opensearch-2" into 1.
func indexSuffix(component string) int {
	n := 0
	for _, c := range component[strings.LastIndexByte(component, '-')+1:] {
		n = n*10 + int(c-'0')
	}
	return n - 1
}
