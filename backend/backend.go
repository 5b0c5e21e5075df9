// Package backend opens baedal's connections to OpenSearch, Redis and
// PostgreSQL, each with bounded timeouts and pool sizes, and probes their
// health.
//
// Invariant: no client built here can block forever: every dial, read, write
// and request has a configured timeout.
package backend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/osapi"
)

// OpenSearchConfig says how to reach OpenSearch.
type OpenSearchConfig struct {
	// URLs of the HTTP endpoints, comma-separated on the command line.
	URLs []string
	// RequestTimeout bounds every request attempt.
	RequestTimeout time.Duration
	// Username and Password for basic auth, optional.
	Username, Password string
	// TLSCAFile verifies an https:// node (default: the system roots);
	// TLSCertFile and TLSKeyFile are a client certificate, optional.
	TLSCAFile, TLSCertFile, TLSKeyFile string
	// AWSRegion turns on AWS SigV4 signing (Amazon OpenSearch Service or
	// Serverless) with the credentials of the AWS SDK's default chain
	// (sigv4.go); AWSService is "es" (default) or "aoss".
	AWSRegion, AWSService string
}

// Flags binds the configuration to command-line flags.
func (c *OpenSearchConfig) Flags(fs *flag.FlagSet) {
	fs.Func("opensearch-urls", "comma-separated OpenSearch HTTP endpoints (default: the local stack's)", func(s string) error {
		c.URLs = splitList(s)
		return nil
	})
	fs.DurationVar(&c.RequestTimeout, "opensearch-timeout", c.RequestTimeout, "timeout of one OpenSearch request attempt")
	fs.StringVar(&c.Username, "opensearch-username", c.Username, "OpenSearch basic-auth user (optional)")
	fs.StringVar(&c.Password, "opensearch-password", c.Password, "OpenSearch basic-auth password (optional; prefer the env var BAEDAL_OPENSEARCH_PASSWORD)")
	fs.StringVar(&c.TLSCAFile, "opensearch-tls-ca-file", c.TLSCAFile, "PEM CA bundle that signs the OpenSearch nodes' certificates (https:// URLs; default: the system roots)")
	fs.StringVar(&c.TLSCertFile, "opensearch-tls-cert-file", c.TLSCertFile, "PEM client certificate for OpenSearch (with --opensearch-tls-key-file)")
	fs.StringVar(&c.TLSKeyFile, "opensearch-tls-key-file", c.TLSKeyFile, "PEM key of the OpenSearch client certificate")
	fs.StringVar(&c.AWSRegion, "opensearch-aws-region", c.AWSRegion, "sign every OpenSearch request with AWS SigV4 for this region (Amazon OpenSearch Service; credentials from the AWS SDK's default chain: AWS_* variables, AWS_PROFILE, web identity, instance role)")
	fs.StringVar(&c.AWSService, "opensearch-aws-service", c.AWSService, "SigV4 service name with --opensearch-aws-region: es (OpenSearch Service) or aoss (Serverless)")
}

// Validate names the first invalid field.
func (c *OpenSearchConfig) Validate() error {
	if len(c.URLs) == 0 {
		return errors.New("opensearch-urls: at least one URL is required (or start the local stack with `baedal up`)")
	}
	for _, u := range c.URLs {
		if err := validateHTTPURL(u); err != nil {
			return fmt.Errorf("opensearch-urls: %w", err)
		}
	}
	if c.RequestTimeout <= 0 {
		return fmt.Errorf("opensearch-timeout: got %s, must be > 0", c.RequestTimeout)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("opensearch-tls-cert-file, opensearch-tls-key-file: give both or neither")
	}
	if c.AWSRegion != "" && !slices.Contains(awsServices, c.AWSService) {
		return fmt.Errorf("opensearch-aws-service: got %q, allowed: %s", c.AWSService, strings.Join(awsServices, ", "))
	}
	if c.AWSRegion != "" && (c.Username != "" || c.Password != "") {
		return errors.New("opensearch-aws-region, opensearch-username: SigV4 and basic auth both set the Authorization header; give one")
	}
	_, err := c.tlsConfig()
	return err
}

// tlsConfig is the TLS configuration of https:// nodes, from the files.
func (c *OpenSearchConfig) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if err := loadTLSFiles(cfg, "opensearch-tls", c.TLSCAFile, c.TLSCertFile, c.TLSKeyFile); err != nil {
		return nil, err
	}
	return cfg, nil
}

// RedisConfig says how to reach Redis: one primary and optional read
// replicas, each as host:port or a redis:// or rediss:// URL
// (rediss://user:password@host:6380/2), sharing the credentials, DB and TLS
// settings below. A URL's own user, password and /db win over the fields.
//
// With Cluster, Addr names one or more seed nodes of a Redis Cluster
// (comma-separated) and every client built here is a go-redis
// ClusterClient: it learns the other nodes and the slot map from the seeds
// and routes each command to the master of its key's slot.
type RedisConfig struct {
	Addr         string
	ReplicaAddrs []string
	// Cluster makes Addr the seed nodes of a Redis Cluster.
	Cluster bool
	// ClusterReadFromReplicas, in cluster mode, sends the reads that
	// tolerate replica lag (the feed's, the link store's) to the replicas
	// of each key's shard, ranked per shard (redisread.Cluster); every
	// other command stays on the masters.
	ClusterReadFromReplicas bool
	// Username and Password authenticate (AUTH, or an ACL user with
	// Username); PasswordFile holds the password (its first line) instead.
	Username, Password, PasswordFile string
	// DB is the database number of an address that names none.
	DB int
	// TLS turns TLS on (rediss:// does too). TLSCAFile verifies the server
	// (default: the system roots); TLSCertFile and TLSKeyFile are the
	// client certificate, for servers that ask for one.
	TLS                                bool
	TLSCAFile, TLSCertFile, TLSKeyFile string
	DialTimeout                        time.Duration
	ReadTimeout                        time.Duration
	WriteTimeout                       time.Duration
	PoolSize                           int
}

// Flags binds the configuration to command-line flags.
func (c *RedisConfig) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "redis-addr", c.Addr, "Redis primary host:port, or redis[s]://[user[:password]@]host:port[/db] (default: the local stack's;\nprefer the env var BAEDAL_REDIS_ADDR for a URL with a password)")
	fs.Func("redis-replica-addrs", "comma-separated Redis read replicas, host:port or redis[s]:// URLs", func(s string) error {
		c.ReplicaAddrs = splitList(s)
		return nil
	})
	fs.BoolVar(&c.Cluster, "redis-cluster-mode", c.Cluster, "Redis is a Redis Cluster: --redis-addr lists one or more of its nodes (comma-separated) and every subsystem uses a cluster client")
	fs.BoolVar(&c.ClusterReadFromReplicas, "redis-cluster-read-from-replicas", c.ClusterReadFromReplicas, "in cluster mode, send the feed's and link store's reads to the replicas of each key's shard, ranked per shard by --redis-replica-policy")
	fs.StringVar(&c.Username, "redis-username", c.Username, "Redis ACL user (optional)")
	fs.StringVar(&c.Password, "redis-password", c.Password, "Redis password (optional; prefer BAEDAL_REDIS_PASSWORD or --redis-password-file)")
	fs.StringVar(&c.PasswordFile, "redis-password-file", c.PasswordFile, "file whose first line is the Redis password")
	fs.IntVar(&c.DB, "redis-db", c.DB, "Redis database number (a URL's /db wins)")
	fs.BoolVar(&c.TLS, "redis-tls", c.TLS, "connect to Redis over TLS (implied by rediss://)")
	fs.StringVar(&c.TLSCAFile, "redis-tls-ca-file", c.TLSCAFile, "PEM CA bundle that signs the Redis server certificate (default: the system roots)")
	fs.StringVar(&c.TLSCertFile, "redis-tls-cert-file", c.TLSCertFile, "PEM client certificate for Redis (with --redis-tls-key-file)")
	fs.StringVar(&c.TLSKeyFile, "redis-tls-key-file", c.TLSKeyFile, "PEM key of the Redis client certificate")
	fs.DurationVar(&c.DialTimeout, "redis-dial-timeout", c.DialTimeout, "Redis dial timeout")
	fs.DurationVar(&c.ReadTimeout, "redis-read-timeout", c.ReadTimeout, "Redis read timeout")
	fs.DurationVar(&c.WriteTimeout, "redis-write-timeout", c.WriteTimeout, "Redis write timeout")
	fs.IntVar(&c.PoolSize, "redis-pool-size", c.PoolSize, "Redis connections per server")
}

// Validate names the first invalid field. It reads the password, CA and
// certificate files, so that a wrong path fails at start.
func (c *RedisConfig) Validate() error {
	if c.Addr == "" {
		return errors.New("redis-addr: required (or start the local stack with `baedal up`)")
	}
	addrs := append([]string{c.Addr}, c.ReplicaAddrs...)
	if c.Cluster {
		addrs = splitList(c.Addr)
		if len(c.ReplicaAddrs) > 0 {
			return errors.New("redis-replica-addrs: not used with --redis-cluster-mode (a cluster's replicas are found from its nodes; see --redis-cluster-read-from-replicas)")
		}
		if c.DB != 0 {
			return fmt.Errorf("redis-db: got %d, a Redis Cluster has only database 0", c.DB)
		}
	} else if c.ClusterReadFromReplicas {
		return errors.New("redis-cluster-read-from-replicas: needs --redis-cluster-mode")
	}
	for _, a := range addrs {
		if err := CheckRedisAddr(a); err != nil {
			return fmt.Errorf("redis-addr: %w", err)
		}
	}
	if c.DB < 0 || c.DB > 15_000 {
		return fmt.Errorf("redis-db: got %d, allowed: 0..15000", c.DB)
	}
	if c.Password != "" && c.PasswordFile != "" {
		return errors.New("redis-password, redis-password-file: give one")
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("redis-tls-cert-file, redis-tls-key-file: give both or neither")
	}
	for _, a := range addrs {
		o, err := c.options(a)
		if err != nil {
			return err
		}
		if c.Cluster && o.DB != 0 {
			return fmt.Errorf("redis-addr: %s names database %d, a Redis Cluster has only database 0", RedactRedisAddr(a), o.DB)
		}
	}
	if c.DialTimeout <= 0 || c.ReadTimeout <= 0 || c.WriteTimeout <= 0 {
		return fmt.Errorf("redis timeouts: dial %s, read %s, write %s: each must be > 0", c.DialTimeout, c.ReadTimeout, c.WriteTimeout)
	}
	if c.PoolSize < 1 || c.PoolSize > 10000 {
		return fmt.Errorf("redis-pool-size: got %d, allowed: 1..10000", c.PoolSize)
	}
	return nil
}

// CheckRedisAddr says what is wrong with a Redis address, if anything.
func CheckRedisAddr(a string) error {
	_, _, err := parseRedisAddr(a)
	return err
}

// parseRedisAddr reads host:port or a redis:// or rediss:// URL, and
// whether the URL names a database.
func parseRedisAddr(a string) (o *redis.Options, namesDB bool, err error) {
	scheme, rest, isURL := strings.Cut(a, "://")
	if !isURL {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, false, fmt.Errorf("got %q, want host:port or a redis:// URL", a)
		}
		return &redis.Options{Addr: a}, false, nil
	}
	if scheme != "redis" && scheme != "rediss" {
		return nil, false, fmt.Errorf("got scheme %q, allowed: redis://, rediss://", scheme)
	}
	if o, err = redis.ParseURL(a); err != nil {
		return nil, false, errors.New(redactedError(err, a))
	}
	_, path, _ := strings.Cut(strings.SplitN(rest, "?", 2)[0], "/")
	return o, path != "", nil
}

// options are the go-redis options for the server at addr: the address's
// own parts, then the configured credentials, DB, TLS, timeouts and pool.
func (c RedisConfig) options(addr string) (*redis.Options, error) {
	o, namesDB, err := parseRedisAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("redis-addr: %w", err)
	}
	if o.Username == "" {
		o.Username = c.Username
	}
	switch {
	case o.Password != "":
	case c.Password != "":
		o.Password = c.Password
	case c.PasswordFile != "":
		raw, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("redis-password-file: %w", err)
		}
		pw, _, _ := strings.Cut(string(raw), "\n")
		if o.Password = strings.TrimRight(pw, "\r"); o.Password == "" {
			return nil, fmt.Errorf("redis-password-file: %s: the first line is empty", c.PasswordFile)
		}
	}
	if !namesDB {
		o.DB = c.DB
	}
	if c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" {
		if o.TLSConfig == nil {
			o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	if o.TLSConfig != nil {
		if o.TLSConfig.ServerName == "" {
			o.TLSConfig.ServerName, _, _ = net.SplitHostPort(o.Addr)
		}
		if err := loadTLSFiles(o.TLSConfig, "redis-tls", c.TLSCAFile, c.TLSCertFile, c.TLSKeyFile); err != nil {
			return nil, err
		}
	}
	o.Dialer = redisDialer(c.DialTimeout, o.TLSConfig)
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolSize = c.DialTimeout, c.ReadTimeout, c.WriteTimeout, c.PoolSize
	return o, nil
}

// loadTLSFiles adds a CA bundle and a client certificate to cfg; flag is
// the flags' prefix, for errors.
func loadTLSFiles(cfg *tls.Config, flag, caFile, certFile, keyFile string) error {
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("%s-ca-file: %w", flag, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s-ca-file: %s holds no PEM certificate", flag, caFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("%s-cert-file, %s-key-file: %w", flag, flag, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return nil
}

// RedactRedisAddr is addr fit for a log: a URL's password replaced by
// xxxxx.
func RedactRedisAddr(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.User == nil {
		return addr
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// PostgresConfig says how to reach PostgreSQL.
type PostgresConfig struct {
	URL            string
	ConnectTimeout time.Duration
	MaxConns       int
}

// Flags binds the configuration to command-line flags.
func (c *PostgresConfig) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "postgres-url", c.URL, "PostgreSQL URL (default: the local stack's; prefer the env var BAEDAL_POSTGRES_URL, it holds a password)")
	fs.DurationVar(&c.ConnectTimeout, "postgres-connect-timeout", c.ConnectTimeout, "PostgreSQL connect timeout")
	fs.IntVar(&c.MaxConns, "postgres-max-conns", c.MaxConns, "PostgreSQL pool size")
}

// Validate names the first invalid field.
func (c *PostgresConfig) Validate() error {
	if c.URL == "" {
		return errors.New("postgres-url: required (or start the local stack with `baedal up`)")
	}
	if _, err := pgxpool.ParseConfig(c.URL); err != nil {
		return fmt.Errorf("postgres-url: cannot parse: %s", redactedError(err, c.URL))
	}
	if c.ConnectTimeout <= 0 {
		return fmt.Errorf("postgres-connect-timeout: got %s, must be > 0", c.ConnectTimeout)
	}
	if c.MaxConns < 1 || c.MaxConns > 1000 {
		return fmt.Errorf("postgres-max-conns: got %d, allowed: 1..1000", c.MaxConns)
	}
	return nil
}

// Config gathers the three backends.
type Config struct {
	OpenSearch OpenSearchConfig
	Redis      RedisConfig
	Postgres   PostgresConfig
}

// Defaults returns timeouts and pool sizes fit for a laptop; addresses are empty.
func Defaults() Config {
	return Config{
		OpenSearch: OpenSearchConfig{RequestTimeout: 30 * time.Second, AWSService: "es"},
		Redis:      RedisConfig{DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, PoolSize: 64},
		Postgres:   PostgresConfig{ConnectTimeout: 5 * time.Second, MaxConns: 16},
	}
}

// Flags binds every backend's flags.
func (c *Config) Flags(fs *flag.FlagSet) {
	c.OpenSearch.Flags(fs)
	c.Redis.Flags(fs)
	c.Postgres.Flags(fs)
}

// Validate checks every backend and joins the errors.
func (c *Config) Validate() error {
	return errors.Join(c.OpenSearch.Validate(), c.Redis.Validate(), c.Postgres.Validate())
}

// Clients holds one connection pool per backend.
type Clients struct {
	OpenSearch    *opensearch.Client
	OpenSearchURL []string
	// Redis is a *redis.Client, or a *redis.ClusterClient in cluster mode.
	Redis         redis.UniversalClient
	RedisReplicas []*redis.Client
	Postgres      *pgxpool.Pool
}

// Open builds the clients. It does not wait for the servers: use Health.
func Open(ctx context.Context, cfg Config) (*Clients, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	os, err := OpenOpenSearch(cfg.OpenSearch)
	if err != nil {
		return nil, err
	}
	c := &Clients{OpenSearch: os, OpenSearchURL: cfg.OpenSearch.URLs}
	if c.Redis, err = NewRedis(cfg.Redis, cfg.Redis.Addr); err != nil {
		return nil, err
	}
	for _, addr := range cfg.Redis.ReplicaAddrs {
		r, err := NewRedisNode(cfg.Redis, addr)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.RedisReplicas = append(c.RedisReplicas, r)
	}
	pgcfg, err := pgxpool.ParseConfig(cfg.Postgres.URL)
	if err != nil {
		return nil, fmt.Errorf("backend: postgres url: %s", redactedError(err, cfg.Postgres.URL))
	}
	pgcfg.ConnConfig.ConnectTimeout = cfg.Postgres.ConnectTimeout
	if dial := pgcfg.ConnConfig.DialFunc; dial != nil {
		pgcfg.ConnConfig.DialFunc = postgresDialer(dial)
	}
	pgcfg.MaxConns = int32(cfg.Postgres.MaxConns)
	c.Postgres, err = pgxpool.NewWithConfig(ctx, pgcfg)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("backend: postgres pool: %s", redactedError(err, cfg.Postgres.URL))
	}
	return c, nil
}

// NewRedis is a client for the Redis at addr (host:port or a URL) with the
// configured credentials, TLS and timeouts: a *redis.Client, or with
// cfg.Cluster a *redis.ClusterClient seeded by the comma-separated nodes of
// addr. Its errors that mean Redis cannot answer now are UnavailableErrors.
// It fails only on a configuration that Validate rejects.
func NewRedis(cfg RedisConfig, addr string) (redis.UniversalClient, error) {
	if !cfg.Cluster {
		return NewRedisNode(cfg, addr)
	}
	seeds := splitList(addr)
	if len(seeds) == 0 {
		return nil, errors.New("redis-addr: no cluster node given")
	}
	o, err := cfg.options(seeds[0])
	if err != nil {
		return nil, err
	}
	co := &redis.ClusterOptions{
		Username: o.Username, Password: o.Password,
		TLSConfig: o.TLSConfig, Dialer: o.Dialer,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize,
	}
	for _, seed := range seeds {
		so, err := cfg.options(seed)
		if err != nil {
			return nil, err
		}
		co.Addrs = append(co.Addrs, so.Addr)
	}
	if co.TLSConfig != nil {
		// Each node is verified under its own host name (the dialer fills
		// ServerName from the address it dials).
		co.TLSConfig = co.TLSConfig.Clone()
		co.TLSConfig.ServerName = ""
		co.Dialer = redisDialer(cfg.DialTimeout, co.TLSConfig)
	}
	c := redis.NewClusterClient(co)
	c.AddHook(redisUnavailableHook{})
	return c, nil
}

// NewRedisNode is a client for the one Redis server at addr, whether or not
// it belongs to a cluster (replicas, the link store's old store).
func NewRedisNode(cfg RedisConfig, addr string) (*redis.Client, error) {
	o, err := cfg.options(addr)
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(o)
	c.AddHook(redisUnavailableHook{})
	return c, nil
}

// NewRedisReadOnlyNode is NewRedisNode for a Redis Cluster replica that
// serves reads: every connection sends READONLY first (without it a
// replica answers MOVED to its master).
func NewRedisReadOnlyNode(cfg RedisConfig, addr string) (*redis.Client, error) {
	o, err := cfg.options(addr)
	if err != nil {
		return nil, err
	}
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }
	c := redis.NewClient(o)
	c.AddHook(redisUnavailableHook{})
	return c, nil
}

// Close releases every pool.
func (c *Clients) Close() {
	if c.Redis != nil {
		c.Redis.Close()
	}
	for _, r := range c.RedisReplicas {
		r.Close()
	}
	if c.Postgres != nil {
		c.Postgres.Close()
	}
}

// Health is the result of one probe of one backend.
type Health struct {
	Name    string `json:"name"`
	Healthy bool   `json:"healthy"`
	Detail  string `json:"detail,omitempty"`
	Error   string `json:"error,omitempty"`
	Millis  int64  `json:"latency_ms"`
}

// Probe checks every backend in parallel, each bounded by timeout.
func (c *Clients) Probe(ctx context.Context, timeout time.Duration) []Health {
	type probe struct {
		name string
		fn   func(context.Context) (string, error)
	}
	probes := []probe{
		{"opensearch", c.probeOpenSearch},
		{"redis", func(ctx context.Context) (string, error) { return "PONG", c.Redis.Ping(ctx).Err() }},
		{"postgres", func(ctx context.Context) (string, error) { return "", c.Postgres.Ping(ctx) }},
	}
	for i, r := range c.RedisReplicas {
		probes = append(probes, probe{fmt.Sprintf("redis-replica-%d", i+1), func(ctx context.Context) (string, error) { return "PONG", r.Ping(ctx).Err() }})
	}
	out := make([]Health, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			detail, err := p.fn(ctx)
			h := Health{Name: p.name, Healthy: err == nil, Detail: detail, Millis: time.Since(start).Milliseconds()}
			if err != nil {
				h.Detail = ""
				h.Error = err.Error()
			}
			out[i] = h
		}()
	}
	wg.Wait()
	return out
}

func (c *Clients) probeOpenSearch(ctx context.Context) (string, error) {
	var h struct {
		Status string `json:"status"`
	}
	if err := osapi.New(c.OpenSearch).Do(ctx, http.MethodGet, "/_cluster/health", nil, &h); err != nil {
		return "", err
	}
	if h.Status == "red" {
		return h.Status, errors.New("cluster status is red")
	}
	return h.Status, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func validateHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("got %q, want an http(s)://host:port URL", raw)
	}
	return nil
}

// redactedError keeps a password in a URL out of an error message.
func redactedError(err error, rawURL string) string {
	msg := err.Error()
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// OpenOpenSearch builds only the OpenSearch client (tools and tests that need
// no Redis or PostgreSQL).
func OpenOpenSearch(cfg OpenSearchConfig) (*opensearch.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rt, err := NewOpenSearchTransport(cfg)
	if err != nil {
		return nil, err
	}
	return OpenOpenSearchVia(cfg, rt)
}

// NewOpenSearchTransport is the HTTP transport of OpenSearch clients: pooled
// keep-alive connections, a response-header timeout of RequestTimeout, and
// the configured CA and client certificate for https:// nodes.
func NewOpenSearchTransport(cfg OpenSearchConfig) (*http.Transport, error) {
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	return &http.Transport{
		MaxIdleConnsPerHost:   64,
		ResponseHeaderTimeout: cfg.RequestTimeout,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		TLSClientConfig:       tlsCfg,
	}, nil
}

// OpenOpenSearchVia is OpenOpenSearch sending through rt.
func OpenOpenSearchVia(cfg OpenSearchConfig, rt http.RoundTripper) (*opensearch.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sign, err := cfg.awsSigner()
	if err != nil {
		return nil, err
	}
	c, err := opensearch.NewClient(opensearch.Config{
		Addresses:      cfg.URLs,
		Username:       cfg.Username,
		Password:       cfg.Password,
		RequestTimeout: cfg.RequestTimeout,
		Transport:      rt,
		Signer:         sign,
	})
	if err != nil {
		return nil, fmt.Errorf("backend: opensearch client for %v: %w", cfg.URLs, err)
	}
	return c, nil
}
