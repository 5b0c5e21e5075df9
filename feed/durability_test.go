package feed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// The child process of TestFanoutSurvivesSIGKILL reads its backends from
// these variables.
const (
	envKillChild  = "FEED_TEST_KILL_CHILD_DB"
	envKillRedis  = "FEED_TEST_KILL_CHILD_REDIS"
	envKillPrefix = "FEED_TEST_KILL_CHILD_PREFIX"
)

// runKillChild is a fan-out worker that writes 50 followers per page and
// pauses 20 ms after each, so the parent can kill it in the middle of a job.
func runKillChild() int {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, os.Getenv(envKillChild))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: postgres:", err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envKillRedis)})
	cfg := testConfig(StrategyPush, os.Getenv(envKillPrefix))
	cfg.Workers = 1
	cfg.FollowerPageSize = 50
	svc, err := NewService(cfg, db, rdb, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	svc.afterFanoutPage = func() { time.Sleep(20 * time.Millisecond) }
	fmt.Println("child: worker running")
	if err := svc.RunWorkers(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	return 0
}

// addFollowers creates n users following author, by SQL (setup only).
func addFollowers(t *testing.T, db *pgxpool.Pool, author int64, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Query(ctx, `INSERT INTO feed_users (username) SELECT 'follower' || g FROM generate_series(1, $1) g RETURNING id`, n)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) != n {
		t.Fatalf("created %d followers, want %d (%v)", len(ids), n, rows.Err())
	}
	if _, err := db.Exec(ctx, `INSERT INTO feed_follows (followee_id, follower_id) SELECT $1, unnest($2::bigint[])`, author, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE feed_users SET follower_count = $2 WHERE id = $1`, author, n); err != nil {
		t.Fatal(err)
	}
	return ids
}

// countHaving returns how many of the users' timelines hold the post.
func countHaving(t *testing.T, svc *Service, users []int64, postID int64) int {
	t.Helper()
	ctx := context.Background()
	pipe := svc.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(users))
	member := strconv.FormatInt(postID, 10)
	for i, u := range users {
		cmds[i] = pipe.ZCount(ctx, svc.keys.timeline(u), member, member)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cmds {
		n += int(c.Val())
	}
	return n
}

func TestFanoutSurvivesSIGKILL(t *testing.T) {
	b := newBackends(t)
	st := b.rdb.(*redis.Client).Options().Addr
	cfg := testConfig(StrategyPush, b.prefix)
	svc := newService(t, b, cfg)
	ctx := context.Background()
	author := mustUser(t, svc, "author")
	const followers = 2000
	ids := addFollowers(t, b.db, author, followers)

	post := mustPost(t, svc, author, "this post must survive a killed worker")

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), envKillChild+"="+b.dbURL, envKillRedis+"="+st, envKillPrefix+"="+b.prefix)
	var out bytes.Buffer
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatalf("start the worker process: %v", err)
	}
	killed := false
	defer func() {
		if !killed {
			child.Process.Kill()
			child.Wait()
		}
	}()

	// Wait until the child is in the middle of the job, then SIGKILL it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := countHaving(t, svc, ids, post.ID)
		if n > 0 && n < followers {
			break
		}
		if n == followers {
			t.Fatalf("the child finished the whole fan-out before it could be killed; output:\n%s", out.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child delivered nothing in 20s; output:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL the worker: %v", err)
	}
	killed = true
	err := child.Wait()
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the worker did not die of SIGKILL: %v", err)
	}
	partial := countHaving(t, svc, ids, post.ID)
	if partial == 0 || partial == followers {
		t.Fatalf("after the kill %d of %d followers have the post; want a partial delivery", partial, followers)
	}
	pending, err := b.rdb.XPending(ctx, svc.keys.stream(), consumerGroup).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pending.Count != 1 {
		t.Fatalf("pending jobs after the kill: %d, want 1 (the interrupted job)", pending.Count)
	}
	t.Logf("killed the worker after %d of %d followers", partial, followers)

	// Restart: a new worker takes the job over and finishes it.
	startWorkers(t, svc)
	waitSettled(t, svc)
	if got := countHaving(t, svc, ids, post.ID); got != followers {
		t.Fatalf("after restart %d of %d followers have the post", got, followers)
	}
	for _, u := range []int64{ids[0], ids[partial-1], ids[partial], ids[followers-1]} {
		page, err := svc.Feed(ctx, u, 0, 50)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, p := range page.Posts {
			if p.ID == post.ID {
				seen++
			}
		}
		if seen != 1 || len(page.Posts) != 1 {
			t.Errorf("follower %d: the post appears %d times in a feed of %d posts, want exactly once", u, seen, len(page.Posts))
		}
	}
	if done, err := svc.FanoutDone(ctx, post.ID); err != nil || !done {
		t.Errorf("FanoutDone = %v, %v; want true", done, err)
	}
}

// A process that dies after the commit but before it published the job
// leaves only the outbox row; the relay publishes it.
func TestRelayDeliversPostCommittedButNeverPublished(t *testing.T) {
	b := newBackends(t)
	cfg := testConfig(StrategyHybrid, b.prefix)
	cfg.RelayAfter = 200 * time.Millisecond
	svc := newService(t, b, cfg)
	ctx := context.Background()
	author, reader := mustUser(t, svc, "author"), mustUser(t, svc, "reader")
	mustFollow(t, svc, reader, author)

	id := svc.ids.Next()
	// Exactly what CreatePost commits, without the publish step after it.
	if _, err := b.db.Exec(ctx, `WITH p AS (INSERT INTO feed_posts (id, author_id, text, created_at) VALUES ($1, $2, 'orphan', $3) RETURNING id)
		INSERT INTO feed_outbox (post_id) SELECT id FROM p`, id, author, PostTime(id)); err != nil {
		t.Fatal(err)
	}
	if got := feedTexts(t, svc, reader, 10); len(got) != 0 {
		t.Fatalf("feed before the relay ran: %q, want empty", got)
	}
	startWorkers(t, svc)
	waitSettled(t, svc)
	if got := feedTexts(t, svc, reader, 10); len(got) != 1 || got[0] != "orphan" {
		t.Fatalf("feed after the relay: %q, want [orphan]", got)
	}
}
