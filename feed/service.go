package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// User is a feed user.
type User struct {
	ID            int64     `json:"id"`
	Username      string    `json:"username"`
	ProfilePic    string    `json:"profilePic"`
	FollowerCount int       `json:"followerCount"`
	CreatedAt     time.Time `json:"createdAt"`
}

// Post is one post, as stored in Redis (post:{id}) and returned by the API.
type Post struct {
	ID         int64     `json:"id"`
	AuthorID   int64     `json:"authorId"`
	Username   string    `json:"username"`
	ProfilePic string    `json:"profilePic"`
	Text       string    `json:"text"`
	CreatedAt  time.Time `json:"createdAt"`
}

// ReadFunc runs one read (a timeline, post payloads) on the Redis server it
// chooses. The replica selector (S3) plugs in here: it picks a replica, times
// the read and retries on the next one; the default runs on the primary.
type ReadFunc func(ctx context.Context, read func(ctx context.Context, rc redis.Cmdable) error) error

// Service is one feed deployment: its configuration, its PostgreSQL pool and
// Redis primary. It is safe for concurrent use.
type Service struct {
	cfg     Config
	db      *pgxpool.Pool
	rdb     redis.UniversalClient
	read    ReadFunc
	keys    keys
	ids     *IDGenerator
	log     *slog.Logger
	metrics *metrics
	// cache holds checked post payloads, and compat their elements of the
	// compatibility feed (nil when disabled).
	cache, compat *postCache
	// celebrities guesses which celebrities a user follows (hybrid reads).
	celebrities *celebrityGuesses
	// known is this process's copy of the celebrity set (hybrid reads).
	known *knownCelebrities
	// cluster: rdb is a Redis Cluster client, so a page's payloads are
	// read with one GET each (pipelined) instead of one MGET.
	cluster bool
	// copies names the hot keys' copies (none on a single Redis by default).
	copies *hotCopies
	// batch pipelines concurrent reads (nil when ReadBatch is -1).
	batch *readBatcher

	// afterFanoutPage, if set (tests only), runs after each follower page
	// a worker wrote.
	afterFanoutPage func()
}

type metrics struct {
	fanoutLag      prometheus.Histogram
	fanoutDuration prometheus.Histogram
	fanoutJobs     *prometheus.CounterVec
	relayed        prometheus.Counter
	readDuration   prometheus.Histogram
	// cacheHits and cacheMisses count post payloads found and not found in
	// the in-process cache.
	cacheHits, cacheMisses prometheus.Counter
	// readBatch observes the read commands of each batched pipeline.
	readBatch prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, strategy Strategy) *metrics {
	labels := prometheus.Labels{"strategy": string(strategy)}
	m := &metrics{
		fanoutLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baedal_feed_fanout_lag_seconds", ConstLabels: labels,
			Help:    "Time from a post's creation until its fan-out finished (every follower's timeline has it).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}),
		fanoutDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baedal_feed_fanout_duration_seconds", ConstLabels: labels,
			Help:    "Time a worker spent on one fan-out job.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}),
		fanoutJobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_feed_fanout_jobs_total", ConstLabels: labels,
			Help: "Fan-out jobs by result: pushed, pulled (no timeline writes), failed, dead (poison, moved to the dead-letter stream).",
		}, []string{"result"}),
		relayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baedal_feed_outbox_relayed_total", ConstLabels: labels,
			Help: "Posts published again by the outbox relay because their fan-out had not finished in time.",
		}),
		readDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baedal_feed_read_duration_seconds", ConstLabels: labels,
			Help:    "Time to assemble one feed page.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}),
		readBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baedal_feed_read_batch_reads", ConstLabels: labels,
			Help:    "Concurrent feed reads sent to Redis in one pipeline (feed-read-batch); a hybrid read is two or more commands.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
	}
	cacheLookups := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "baedal_feed_post_cache_lookups_total", ConstLabels: labels,
		Help: "Post payloads looked up in the in-process cache by result: hit, miss (read from Redis, or PostgreSQL, then cached).",
	}, []string{"result"})
	m.cacheHits, m.cacheMisses = cacheLookups.WithLabelValues("hit"), cacheLookups.WithLabelValues("miss")
	reg.MustRegister(m.fanoutLag, m.fanoutDuration, m.fanoutJobs, m.relayed, m.readDuration, m.readBatch, cacheLookups)
	return m
}

// NewService builds a service. It does not touch the servers: run Migrate
// first, and RunWorkers to deliver posts. log and reg may be nil.
func NewService(cfg Config, db *pgxpool.Pool, rdb redis.UniversalClient, log *slog.Logger, reg prometheus.Registerer) (*Service, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if db == nil || rdb == nil {
		return nil, errors.New("feed: NewService needs a PostgreSQL pool and a Redis client")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Service{
		cfg: cfg, db: db, rdb: rdb, keys: newKeys(cfg.KeyPrefix), ids: NewIDGenerator(nil),
		log: log.With("component", "feed", "strategy", string(cfg.Strategy)), metrics: newMetrics(reg, cfg.Strategy),
		cache: newPostCache(cfg.PostCacheEntries), compat: newPostCache(cfg.PostCacheEntries),
		celebrities: newCelebrityGuesses(), known: newKnownCelebrities(),
	}
	_, s.cluster = rdb.(*redis.ClusterClient)
	copies := cfg.HotKeyCopies
	if copies == 0 {
		copies = 1
		if s.cluster {
			copies = defaultClusterHotKeyCopies
		}
	}
	s.copies = newHotCopies(copies, s.keys.celebritiesVersion, s.keys.versionCopyBase)
	s.read = func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
		return read(ctx, rdb)
	}
	if cfg.ReadBatch > 0 {
		s.batch = newReadBatcher(s.read, cfg.ReadBatch, cfg.ReadBatchesInFlight, s.metrics.readBatch)
	}
	return s, nil
}

// UseReadClient routes timeline reads through f (e.g. the replica selector).
// Call it before serving. With read batching, f runs one pipeline of many
// reads at a time; it may run it again (on another server) when it returns
// an error, and must not run it twice at once.
func (s *Service) UseReadClient(f ReadFunc) {
	if f != nil {
		s.read = f
		if s.batch != nil {
			s.batch.read = f
		}
	}
}

// Config returns the service's configuration with defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// ValidateUsername checks a username: 1..32 of a-z A-Z 0-9 _ . -
func ValidateUsername(name string) error {
	if len(name) < 1 || len(name) > 32 {
		return invalid("username", "must be 1..32 characters, got %d", utf8.RuneCountInString(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return invalid("username", "may contain only a-z, A-Z, 0-9, '_', '.' and '-', got %q", r)
		}
	}
	return nil
}

// ValidateText checks a post's text: valid UTF-8, not blank, at most
// maxRunes characters.
func ValidateText(text string, maxRunes int) error {
	if !utf8.ValidString(text) {
		return invalid("text", "must be valid UTF-8")
	}
	if strings.TrimSpace(text) == "" {
		return invalid("text", "must not be empty")
	}
	if n := utf8.RuneCountInString(text); n > maxRunes {
		return invalid("text", "must be at most %d characters, got %d", maxRunes, n)
	}
	return nil
}

// validateProfilePic checks a profile picture URL: empty, or http(s) and at
// most 512 characters (as api/openapi.json's maxLength counts them), and
// not under SeedPicturePrefix.
func validateProfilePic(url string) error {
	if n := utf8.RuneCountInString(url); n > 512 {
		return invalid("profilePic", "must be at most 512 characters, got %d", n)
	}
	if url != "" && !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return invalid("profilePic", "must be an http(s) URL or empty")
	}
	if strings.HasPrefix(url, SeedPicturePrefix) {
		// Seed tells its own users by this prefix and replaces them: a user
		// made through the API must never look like one.
		return invalid("profilePic", "must not start with %s, which marks generated users", SeedPicturePrefix)
	}
	return nil
}

// CreateUser adds a user.
func (s *Service) CreateUser(ctx context.Context, username, profilePic string) (User, error) {
	if err := ValidateUsername(username); err != nil {
		return User{}, err
	}
	if err := validateProfilePic(profilePic); err != nil {
		return User{}, err
	}
	u := User{Username: username, ProfilePic: profilePic}
	err := s.db.QueryRow(ctx,
		`INSERT INTO feed_users (username, profile_pic) VALUES ($1, $2) RETURNING id, created_at`,
		username, profilePic).Scan(&u.ID, &u.CreatedAt)
	if isUniqueViolation(err) {
		return User{}, fmt.Errorf("username %q: %w", username, ErrUsernameTaken)
	}
	if err != nil {
		return User{}, fmt.Errorf("feed: insert user %q: %w", username, err)
	}
	return u, nil
}

// GetUser returns one user.
func (s *Service) GetUser(ctx context.Context, id int64) (User, error) {
	u := User{ID: id}
	err := s.db.QueryRow(ctx, `SELECT username, profile_pic, follower_count, created_at FROM feed_users WHERE id = $1`, id).
		Scan(&u.Username, &u.ProfilePic, &u.FollowerCount, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, &UnknownUserError{ID: id}
	}
	if err != nil {
		return User{}, fmt.Errorf("feed: read user %d: %w", id, err)
	}
	return u, nil
}

// requireUsers returns an UnknownUserError for the first id that does not exist.
func requireUsers(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, ids ...int64) error {
	rows, err := q.Query(ctx, `SELECT id FROM feed_users WHERE id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("feed: look up users %v: %w", ids, err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("feed: look up users %v: %w", ids, err)
	}
	for _, id := range ids {
		if !containsID(found, id) {
			return &UnknownUserError{ID: id}
		}
	}
	return nil
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Follow makes follower follow followee and updates the follower's timeline:
// the followee's recent posts are added unless they are pulled at read time.
// Following twice is not an error (PUT is idempotent; the Redis side is
// applied again, which repairs it if an earlier call died half-way).
func (s *Service) Follow(ctx context.Context, follower, followee int64) error {
	if follower == followee {
		return fmt.Errorf("user %d: %w", follower, ErrSelfFollow)
	}
	var followers int
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := requireUsers(ctx, tx, follower, followee); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO feed_follows (followee_id, follower_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, followee, follower)
		if err != nil {
			return err
		}
		delta := 0
		if tag.RowsAffected() == 1 {
			delta = 1
		}
		return tx.QueryRow(ctx, `UPDATE feed_users SET follower_count = follower_count + $2 WHERE id = $1 RETURNING follower_count`, followee, delta).Scan(&followers)
	})
	if err != nil {
		if errors.Is(err, ErrUnknownUser) {
			return err
		}
		return fmt.Errorf("feed: %d follows %d: %w", follower, followee, err)
	}

	if s.cfg.Strategy == StrategyHybrid && followers >= s.cfg.CelebrityThreshold {
		if err := s.changeCelebrities(ctx, s.rdb, "add", strconv.FormatInt(followee, 10)); err != nil {
			return err
		}
	}
	pipe := s.rdb.Pipeline()
	pipe.SAdd(ctx, s.keys.followees(follower), followee)
	pulled := pipe.SIsMember(ctx, s.keys.celebrities, followee)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("feed: redis side of %d follows %d: %w", follower, followee, err)
	}
	if !s.pushes(pulled.Val()) {
		return nil
	}
	ids, err := s.recentPostIDs(ctx, followee, s.cfg.TimelineCap)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	pipe = s.rdb.Pipeline()
	pipe.ZAdd(ctx, s.keys.timeline(follower), idMembers(ids)...)
	pipe.ZRemRangeByRank(ctx, s.keys.timeline(follower), 0, int64(-s.cfg.TimelineCap-1))
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("feed: backfill %d posts of %d into the timeline of %d: %w", len(ids), followee, follower, err)
	}
	return nil
}

// pushes says whether posts of an author are written into timelines, given
// whether the author is in the celebrity set.
func (s *Service) pushes(celebrity bool) bool {
	switch s.cfg.Strategy {
	case StrategyPush:
		return true
	case StrategyHybrid:
		return !celebrity
	default:
		return false
	}
}

// Unfollow removes the follow and the followee's posts from the follower's
// timeline. Unfollowing someone not followed is not an error.
func (s *Service) Unfollow(ctx context.Context, follower, followee int64) error {
	if follower == followee {
		return fmt.Errorf("user %d: %w", follower, ErrSelfFollow)
	}
	var followers int
	var removed bool
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := requireUsers(ctx, tx, follower, followee); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM feed_follows WHERE followee_id = $1 AND follower_id = $2`, followee, follower)
		if err != nil {
			return err
		}
		removed = tag.RowsAffected() == 1
		delta := 0
		if removed {
			delta = -1
		}
		return tx.QueryRow(ctx, `UPDATE feed_users SET follower_count = follower_count + $2 WHERE id = $1 RETURNING follower_count`, followee, delta).Scan(&followers)
	})
	if err != nil {
		if errors.Is(err, ErrUnknownUser) {
			return err
		}
		return fmt.Errorf("feed: %d unfollows %d: %w", follower, followee, err)
	}
	ids, err := s.recentPostIDs(ctx, followee, s.cfg.TimelineCap)
	if err != nil {
		return err
	}
	pipe := s.rdb.Pipeline()
	pipe.SRem(ctx, s.keys.followees(follower), followee)
	if len(ids) > 0 {
		pipe.ZRem(ctx, s.keys.timeline(follower), idStrings(ids)...)
	}
	wasCelebrity := pipe.SIsMember(ctx, s.keys.celebrities, followee)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("feed: redis side of %d unfollows %d: %w", follower, followee, err)
	}
	if s.cfg.Strategy == StrategyHybrid && wasCelebrity.Val() && followers < s.cfg.CelebrityThreshold {
		// The author falls under the threshold: a worker pushes their recent
		// posts to their followers, then stops pulling them.
		if err := s.enqueueDemote(ctx, followee); err != nil {
			return err
		}
	}
	return nil
}

// recentPostIDs returns the author's newest post ids, newest first.
func (s *Service) recentPostIDs(ctx context.Context, author int64, limit int) ([]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM feed_posts WHERE author_id = $1 ORDER BY id DESC LIMIT $2`, author, limit)
	if err != nil {
		return nil, fmt.Errorf("feed: recent posts of %d: %w", author, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("feed: recent posts of %d: %w", author, err)
	}
	return ids, nil
}

// CreatePost stores a post durably and schedules its fan-out. When it
// returns without error the post is committed in PostgreSQL with an outbox
// row, so it reaches every follower even if this process dies right now.
func (s *Service) CreatePost(ctx context.Context, author int64, text string) (Post, error) {
	if err := ValidateText(text, s.cfg.MaxTextRunes); err != nil {
		return Post{}, err
	}
	p := Post{AuthorID: author, Text: text}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT username, profile_pic FROM feed_users WHERE id = $1`, author).Scan(&p.Username, &p.ProfilePic)
		if errors.Is(err, pgx.ErrNoRows) {
			return &UnknownUserError{ID: author}
		}
		if err != nil {
			return err
		}
		for attempt := 0; ; attempt++ {
			p.ID = s.ids.Next()
			p.CreatedAt = PostTime(p.ID)
			tag, err := tx.Exec(ctx, `INSERT INTO feed_posts (id, author_id, text, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
				p.ID, author, text, p.CreatedAt)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				break
			}
			if attempt == 10 {
				return fmt.Errorf("post id collided 10 times, last %d", p.ID)
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO feed_outbox (post_id) VALUES ($1)`, p.ID)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrUnknownUser) {
			return Post{}, err
		}
		return Post{}, fmt.Errorf("feed: insert post by %d: %w", author, err)
	}
	if err := s.publish(ctx, []Post{p}); err != nil {
		// Committed: the relay publishes it later. The caller's post is safe.
		s.log.Warn("publish after commit failed; the outbox relay will retry", "post", p.ID, "err", err)
	}
	return p, nil
}

// addAuthorPost adds a post to its author's recent posts, trimmed to
// AuthorPostsCap (idempotent).
func (s *Service) addAuthorPost(ctx context.Context, pipe redis.Pipeliner, author, postID int64) {
	s.addPostTo(ctx, pipe, s.keys.author(author), postID)
}

// addPostTo adds a post to key, an author's recent posts or a copy of them,
// trimmed to AuthorPostsCap (idempotent).
func (s *Service) addPostTo(ctx context.Context, pipe redis.Pipeliner, key string, postID int64) {
	pipe.ZAdd(ctx, key, redis.Z{Score: float64(postID), Member: strconv.FormatInt(postID, 10)})
	pipe.ZRemRangeByRank(ctx, key, 0, int64(-s.cfg.AuthorPostsCap-1))
}

// publish writes the posts' payloads and authors' recent-post sets and
// appends one fan-out job per post, in one pipeline. Doing it again is
// harmless: every write is idempotent and a repeated job delivers nothing new.
//
// With hot-key copies, the posts of celebrities go to their copies too, so
// that a follower reading any copy sees the post once its POST was
// answered; the fan-out job writes them again (hotcopies.go).
func (s *Service) publish(ctx context.Context, posts []Post) error {
	var celebrity []bool
	if s.copies.enabled() {
		authors := make([]any, len(posts))
		for i, p := range posts {
			authors[i] = p.AuthorID
		}
		var err error
		if celebrity, err = s.rdb.SMIsMember(ctx, s.keys.celebrities, authors...).Result(); err != nil {
			return fmt.Errorf("feed: publish %d posts: which authors are celebrities: %w", len(posts), err)
		}
	}
	pipe := s.rdb.Pipeline()
	for i, p := range posts {
		payload, err := json.Marshal(p)
		if err != nil {
			return err
		}
		pipe.Set(ctx, s.keys.post(p.ID), payload, 0)
		s.addAuthorPost(ctx, pipe, p.AuthorID, p.ID)
		if celebrity != nil && celebrity[i] {
			for _, key := range s.copies.postKeys(s.keys.author(p.AuthorID)) {
				s.addPostTo(ctx, pipe, key, p.ID)
			}
		}
		pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: s.keys.stream(), MaxLen: s.cfg.StreamMaxLen, Approx: true,
			Values: []any{"kind", jobPost, "post", p.ID, "author", p.AuthorID},
		})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("feed: publish %d posts: %w", len(posts), err)
	}
	return nil
}

func (s *Service) enqueueDemote(ctx context.Context, author int64) error {
	err := s.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: s.keys.stream(), MaxLen: s.cfg.StreamMaxLen, Approx: true,
		Values: []any{"kind", jobDemote, "author", author},
	}).Err()
	if err != nil {
		return fmt.Errorf("feed: enqueue demotion of celebrity %d: %w", author, err)
	}
	return nil
}

// GetPost returns one post from PostgreSQL.
func (s *Service) GetPost(ctx context.Context, id int64) (Post, error) {
	posts, err := s.loadPosts(ctx, []int64{id})
	if err != nil {
		return Post{}, err
	}
	if len(posts) == 0 {
		return Post{}, fmt.Errorf("post %d: %w", id, ErrUnknownPost)
	}
	return posts[0], nil
}

// loadPosts reads posts from PostgreSQL, in no particular order.
func (s *Service) loadPosts(ctx context.Context, ids []int64) ([]Post, error) {
	rows, err := s.db.Query(ctx, `SELECT p.id, p.author_id, u.username, u.profile_pic, p.text, p.created_at
		FROM feed_posts p JOIN feed_users u ON u.id = p.author_id WHERE p.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("feed: load %d posts: %w", len(ids), err)
	}
	posts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Post, error) {
		var p Post
		err := r.Scan(&p.ID, &p.AuthorID, &p.Username, &p.ProfilePic, &p.Text, &p.CreatedAt)
		p.CreatedAt = p.CreatedAt.UTC()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("feed: load %d posts: %w", len(ids), err)
	}
	return posts, nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func idMembers(ids []int64) []redis.Z {
	zs := make([]redis.Z, len(ids))
	for i, id := range ids {
		zs[i] = redis.Z{Score: float64(id), Member: strconv.FormatInt(id, 10)}
	}
	return zs
}

func idStrings(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return out
}
