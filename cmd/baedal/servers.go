package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/flaghelp"
	"github.com/baedal/baedal/localstack"
)

// serverVersions asks the servers a benchmark uses for their versions. The
// addresses come, in this order, from the benchmark's flags, from a stack
// the benchmark started or used (localstack.WithObserver, asked while it
// runs), or from the stack in its --state-dir before the run. A benchmark
// that starts its own redis-server (bench links) gets that binary's
// --version.
type serverVersions struct {
	kinds []string
	run   benchRun
	fs    *flaghelp.Command

	mu                      sync.Mutex
	given, observed, inDir  map[string]string
	observedAny, inDirKnown bool
}

func newServerVersions(kinds []string, r benchRun, c *flaghelp.Command) *serverVersions {
	return &serverVersions{kinds: kinds, run: r, fs: c, given: map[string]string{}, observed: map[string]string{}, inDir: map[string]string{}}
}

// askGiven asks the servers given by flags and those of the stack in
// --state-dir, before the run.
func (s *serverVersions) askGiven(ctx context.Context) {
	if s.run.given != nil {
		b := s.run.given()
		s.ask(ctx, b, s.given, true)
	}
	if f := s.fs.FS.Lookup("state-dir"); f != nil && f.Value.String() != "" {
		if st, err := localstack.Load(f.Value.String()); err == nil {
			s.ask(ctx, stackBackends(st), s.inDir, false)
		}
	}
}

// askStack asks the servers of a stack the benchmark started or used.
func (s *serverVersions) askStack(ctx context.Context, st *localstack.State) {
	s.ask(ctx, stackBackends(st), s.observed, false)
}

func stackBackends(st *localstack.State) backend.Config {
	b := backend.Defaults()
	b.OpenSearch.URLs, b.Redis.Addr, b.Postgres.URL = st.OpenSearchURLs, st.RedisAddr, st.PostgresURL
	return b
}

// ask asks each kind whose address b has; onlyGiven leaves out kinds b has
// no address for (flags not given).
func (s *serverVersions) ask(ctx context.Context, b backend.Config, into map[string]string, onlyGiven bool) {
	d := backend.Defaults()
	if b.OpenSearch.RequestTimeout <= 0 {
		b.OpenSearch.RequestTimeout = d.OpenSearch.RequestTimeout
	}
	if b.Redis.DialTimeout <= 0 {
		b.Redis.DialTimeout, b.Redis.ReadTimeout, b.Redis.WriteTimeout, b.Redis.PoolSize = d.Redis.DialTimeout, d.Redis.ReadTimeout, d.Redis.WriteTimeout, 1
	}
	if b.Postgres.ConnectTimeout <= 0 {
		b.Postgres.ConnectTimeout, b.Postgres.MaxConns = d.Postgres.ConnectTimeout, 1
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, kind := range s.kinds {
		var v string
		var err error
		switch kind {
		case serverOpenSearch:
			if len(b.OpenSearch.URLs) == 0 {
				continue
			}
			v, err = backend.OpenSearchVersion(ctx, b.OpenSearch)
		case serverRedis:
			if b.Redis.Addr == "" {
				continue
			}
			v, err = backend.RedisVersion(ctx, b.Redis)
		case serverPostgres:
			if b.Postgres.URL == "" {
				continue
			}
			v, err = backend.PostgresVersion(ctx, b.Postgres)
		}
		if err != nil {
			v = "unknown: " + err.Error()
		}
		s.mu.Lock()
		into[kind] = v
		s.mu.Unlock()
	}
}

// result is the version of each server kind the benchmark used.
func (s *serverVersions) result(ctx context.Context) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for _, kind := range s.kinds {
		for _, m := range []map[string]string{s.given, s.observed, s.inDir} {
			if v, ok := m[kind]; ok {
				out[kind] = v
				break
			}
		}
		if _, ok := out[kind]; ok {
			continue
		}
		if kind == serverRedis && s.run.redisServer != nil && s.run.redisServer() != "" {
			out[kind] = redisServerVersion(ctx, s.run.redisServer())
			continue
		}
		out[kind] = "unknown: no address of the server the benchmark used is known"
	}
	return out
}

// redisServerVersion runs `redis-server --version` ("Redis server
// v=7.0.15 sha=..."), the binary a benchmark started itself.
func redisServerVersion(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return fmt.Sprintf("unknown: %s --version: %v", bin, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return "unknown: " + strings.TrimSpace(string(out))
}
