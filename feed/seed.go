package feed

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Seed presets.
const (
	// PresetExperiment is the write-up's data set: users 1..N each follow
	// the celebrity N+1; user A (N+2) follows 1..N and the celebrity; user B
	// (N+3) follows user 1 and the celebrity.
	PresetExperiment = "experiment"
	// PresetSocial is a power-law follower graph of N users.
	PresetSocial = "social"
)

// SeedConfig says what Seed loads.
type SeedConfig struct {
	// Preset is PresetExperiment or PresetSocial.
	Preset string
	// Users is N: the ordinary users of the experiment, or all users of the
	// social graph (default 10,000).
	Users int
	// PostsPerUser is the number of posts of each ordinary user (default 3);
	// CelebrityPosts those of the experiment's celebrity (default 3).
	PostsPerUser, CelebrityPosts int
	// Seed makes the graph and posts reproducible (default 1).
	Seed uint64
	// Now is the time of the newest seeded post (default time.Now()); posts
	// spread over the week before it.
	Now time.Time
	// Reset empties the feed tables first. Without it Seed replaces the
	// data of an earlier seed (the demo's included), whose users it knows by
	// their profile picture (SeedPicturePrefix), and refuses a database with
	// any other user.
	Reset bool
}

// SeedPicturePrefix starts the profile picture URL of every seeded user:
// it tells an earlier seed's users, which a seed may replace, from users
// created through the API.
const SeedPicturePrefix = "https://img.baedal.example/u/"

// SeedResult describes what Seed loaded.
type SeedResult struct {
	Users, Follows, Posts int
	// Celebrity, UserA and UserB are the experiment's special users (0 for
	// the social preset).
	Celebrity, UserA, UserB int64
}

// Flags binds the configuration to the flags of `baedal feed seed`.
func (c *SeedConfig) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Preset, "preset", c.Preset, "data set: experiment or social")
	fs.IntVar(&c.Users, "users", c.Users, "ordinary users (experiment) or all users (social)")
	fs.IntVar(&c.PostsPerUser, "posts-per-user", c.PostsPerUser, "posts of each ordinary user")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed")
	fs.BoolVar(&c.Reset, "reset", c.Reset, "empty the feed tables first")
}

// SeedDefaults returns the default seed: the write-up's experiment with
// 10,000 ordinary users and 3 posts each. Now stays zero (the time of the
// seed).
func SeedDefaults() SeedConfig {
	return SeedConfig{Preset: PresetExperiment, Users: 10_000, PostsPerUser: 3, CelebrityPosts: 3, Seed: 1}
}

// EnsureDefaults fills zero fields with SeedDefaults, and Now with the
// current time. Call it before Validate: a zero field is not an error.
func (c *SeedConfig) EnsureDefaults() {
	d := SeedDefaults()
	setIfZero(&c.Preset, d.Preset)
	setIfZero(&c.Users, d.Users)
	setIfZero(&c.PostsPerUser, d.PostsPerUser)
	setIfZero(&c.CelebrityPosts, d.CelebrityPosts)
	setIfZero(&c.Seed, d.Seed)
	if c.Now.IsZero() {
		c.Now = time.Now()
	}
}

// Validate names the first invalid field. It checks the configuration as
// given: run EnsureDefaults first, or zero fields are errors.
func (c *SeedConfig) Validate() error {
	if c.Preset != PresetExperiment && c.Preset != PresetSocial {
		return fmt.Errorf("preset: got %q, allowed: %s, %s", c.Preset, PresetExperiment, PresetSocial)
	}
	if c.Users < 2 || c.Users > 10_000_000 {
		return fmt.Errorf("users: got %d, allowed: 2..10000000", c.Users)
	}
	if c.PostsPerUser < 0 || c.PostsPerUser > 1000 {
		return fmt.Errorf("posts-per-user: got %d, allowed: 0..1000", c.PostsPerUser)
	}
	if c.CelebrityPosts < 0 || c.CelebrityPosts > 100_000 {
		return fmt.Errorf("celebrity posts: got %d, allowed: 0..100000", c.CelebrityPosts)
	}
	return nil
}

// seedGraph is the data set in memory before it is copied.
type seedGraph struct {
	users   int64            // ids 1..users
	names   map[int64]string // special names; others are user<id>
	follows [][2]int64       // followee, follower
	authors []int64          // one entry per post, in time order after shuffling
	counts  map[int64]int    // follower counts
	result  SeedResult
}

// Seed migrates the schema and loads a preset into PostgreSQL with COPY.
// It writes nothing to Redis: call Service.Rebuild for each deployment
// afterwards (SeedAndRebuild does both).
func Seed(ctx context.Context, db *pgxpool.Pool, cfg SeedConfig, progress io.Writer) (SeedResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return SeedResult{}, err
	}
	if progress == nil {
		progress = io.Discard
	}
	if _, err := Migrate(ctx, db); err != nil {
		return SeedResult{}, err
	}
	empty := cfg.Reset
	if !cfg.Reset {
		var users, others int64
		err := db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT starts_with(profile_pic, $1)) FROM feed_users`,
			SeedPicturePrefix).Scan(&users, &others)
		if err != nil {
			return SeedResult{}, fmt.Errorf("feed: seed: count the users: %w", err)
		}
		if others > 0 {
			return SeedResult{}, fmt.Errorf("feed: seed: the database has %d feed users that no seed created; pass --reset to replace them", others)
		}
		if users > 0 {
			fmt.Fprintf(progress, "feed seed: replacing the %d users of an earlier seed\n", users)
			empty = true
		}
	}
	if empty {
		if _, err := db.Exec(ctx, `TRUNCATE feed_outbox, feed_posts, feed_follows, feed_users RESTART IDENTITY`); err != nil {
			return SeedResult{}, fmt.Errorf("feed: seed: empty the feed tables: %w", err)
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	var g seedGraph
	if cfg.Preset == PresetExperiment {
		g = experimentGraph(cfg, rng)
	} else {
		g = socialGraph(cfg, rng)
	}
	start := time.Now()
	if err := copyGraph(ctx, db, cfg, &g); err != nil {
		return SeedResult{}, err
	}
	fmt.Fprintf(progress, "feed seed %s: %d users, %d follows, %d posts in %s\n",
		cfg.Preset, g.result.Users, g.result.Follows, g.result.Posts, time.Since(start).Round(time.Millisecond))
	return g.result, nil
}

// SeedAndRebuild seeds PostgreSQL and rebuilds svc's Redis state from it.
func SeedAndRebuild(ctx context.Context, svc *Service, cfg SeedConfig, progress io.Writer) (SeedResult, error) {
	res, err := Seed(ctx, svc.db, cfg, progress)
	if err != nil {
		return res, err
	}
	return res, svc.Rebuild(ctx, progress)
}

func experimentGraph(cfg SeedConfig, rng *rand.Rand) seedGraph {
	n := int64(cfg.Users)
	celeb, a, b := n+1, n+2, n+3
	g := seedGraph{users: n + 3, counts: map[int64]int{},
		names:  map[int64]string{celeb: "celebrity", a: "user_a", b: "user_b"},
		result: SeedResult{Celebrity: celeb, UserA: a, UserB: b}}
	for u := int64(1); u <= n; u++ {
		g.follows = append(g.follows, [2]int64{celeb, u}, [2]int64{u, a})
	}
	g.follows = append(g.follows, [2]int64{celeb, a}, [2]int64{1, b}, [2]int64{celeb, b})
	for u := int64(1); u <= n; u++ {
		for range cfg.PostsPerUser {
			g.authors = append(g.authors, u)
		}
	}
	for range cfg.CelebrityPosts {
		g.authors = append(g.authors, celeb)
	}
	rng.Shuffle(len(g.authors), func(i, j int) { g.authors[i], g.authors[j] = g.authors[j], g.authors[i] })
	return g
}

// socialGraph: every user follows 5..20 others chosen with a Zipf law over
// a random popularity order, so follower counts follow a power law.
func socialGraph(cfg SeedConfig, rng *rand.Rand) seedGraph {
	n := int64(cfg.Users)
	g := seedGraph{users: n, counts: map[int64]int{}}
	popularity := make([]int64, n)
	for i := range popularity {
		popularity[i] = int64(i) + 1
	}
	rng.Shuffle(len(popularity), func(i, j int) { popularity[i], popularity[j] = popularity[j], popularity[i] })
	zipf := rand.NewZipf(rng, 1.3, 1, uint64(n-1))
	for u := int64(1); u <= n; u++ {
		want := min(5+rng.IntN(16), int(n-1))
		seen := map[int64]bool{u: true}
		for tries := 0; len(seen)-1 < want && tries < want*20; tries++ {
			followee := popularity[zipf.Uint64()]
			if !seen[followee] {
				seen[followee] = true
				g.follows = append(g.follows, [2]int64{followee, u})
			}
		}
		for range cfg.PostsPerUser {
			g.authors = append(g.authors, u)
		}
	}
	rng.Shuffle(len(g.authors), func(i, j int) { g.authors[i], g.authors[j] = g.authors[j], g.authors[i] })
	return g
}

func copyGraph(ctx context.Context, db *pgxpool.Pool, cfg SeedConfig, g *seedGraph) error {
	for _, f := range g.follows {
		g.counts[f[0]]++
	}
	g.result.Users, g.result.Follows, g.result.Posts = int(g.users), len(g.follows), len(g.authors)
	created := cfg.Now.Add(-30 * 24 * time.Hour).UTC()
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"feed_users"}, []string{"id", "username", "profile_pic", "follower_count", "created_at"},
			pgx.CopyFromSlice(int(g.users), func(i int) ([]any, error) {
				id := int64(i) + 1
				name, ok := g.names[id]
				if !ok {
					name = "user" + strconv.FormatInt(id, 10)
				}
				return []any{id, name, SeedPicturePrefix + strconv.FormatInt(id, 10) + ".png", g.counts[id], created}, nil
			}))
		if err != nil {
			return fmt.Errorf("feed: seed: copy %d users: %w", g.users, err)
		}
		if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('feed_users', 'id'), $1)`, g.users); err != nil {
			return fmt.Errorf("feed: seed: advance the user id sequence: %w", err)
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"feed_follows"}, []string{"followee_id", "follower_id", "created_at"},
			pgx.CopyFromSlice(len(g.follows), func(i int) ([]any, error) {
				return []any{g.follows[i][0], g.follows[i][1], created}, nil
			}))
		if err != nil {
			return fmt.Errorf("feed: seed: copy %d follows: %w", len(g.follows), err)
		}
		// Post k of P is at Now - (P-1-k)·step, with sequence k mod 4096:
		// ids are distinct and in the order of k.
		total := len(g.authors)
		step := 7 * 24 * time.Hour / time.Duration(max(total, 1))
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"feed_posts"}, []string{"id", "author_id", "text", "created_at"},
			pgx.CopyFromSlice(total, func(k int) ([]any, error) {
				at := cfg.Now.Add(-time.Duration(total-1-k) * step)
				id := PostIDAt(at, k)
				return []any{id, g.authors[k], fmt.Sprintf("post %d by user %d", k, g.authors[k]), PostTime(id)}, nil
			}))
		if err != nil {
			return fmt.Errorf("feed: seed: copy %d posts: %w", total, err)
		}
		return nil
	})
}
