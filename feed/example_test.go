package feed

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The example users are found in the data: on the experiment graph, user A
// reads, user 1 (followed by A and B) is the pushed author and the
// celebrity is the most followed. An empty database has none.
func TestExampleOnTheExperimentGraph(t *testing.T) {
	b := newBackends(t)
	ctx := context.Background()
	cfg := testConfig(StrategyHybrid, b.prefix)
	cfg.CelebrityThreshold = 10
	svc := newService(t, b, cfg)

	ex, err := svc.Example(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Users != 0 || ex.Reader != nil || ex.Author != nil || ex.MostFollowed != nil {
		t.Errorf("example of an empty database = %+v, want no users", ex)
	}

	res, err := SeedAndRebuild(ctx, svc, SeedConfig{Preset: PresetExperiment, Users: 20, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ex, err = svc.Example(ctx); err != nil {
		t.Fatal(err)
	}
	if ex.Users != 23 || ex.Reader == nil || ex.Reader.ID != res.UserA || ex.Reader.Username != "user_a" || ex.ReaderFollowees != 21 {
		t.Errorf("example reader: %+v (followees %d) of %d users, want user_a %d following 21 of 23", ex.Reader, ex.ReaderFollowees, ex.Users, res.UserA)
	}
	if ex.Author == nil || ex.Author.ID != 1 || ex.Author.FollowerCount != 2 {
		t.Errorf("example author: %+v, want user 1 with 2 followers (A and B)", ex.Author)
	}
	if ex.MostFollowed == nil || ex.MostFollowed.ID != res.Celebrity || ex.MostFollowed.FollowerCount != 22 {
		t.Errorf("most followed: %+v, want the celebrity %d with 22 followers", ex.MostFollowed, res.Celebrity)
	}
	if ex.Strategy != StrategyHybrid || ex.CelebrityThreshold != 10 {
		t.Errorf("example strategy %s threshold %d, want hybrid 10", ex.Strategy, ex.CelebrityThreshold)
	}

	sample, err := svc.SampleFollowees(ctx, res.UserA, 5, res.Celebrity)
	if err != nil {
		t.Fatal(err)
	}
	if len(sample) != 5 {
		t.Errorf("sampled %d followees of A, want 5", len(sample))
	}
	for _, id := range sample {
		if id < 1 || id > 20 {
			t.Errorf("sampled followee %d of A; want an ordinary user 1..20 (the celebrity left out)", id)
		}
	}
	if all, err := svc.SampleFollowees(ctx, res.UserB, 10); err != nil || len(all) != 2 {
		t.Errorf("followees of B: %v, %v; want both (user 1 and the celebrity)", all, err)
	}
}

// A seed replaces an earlier seed without --reset, and refuses a database
// with a user that no seed created.
func TestSeedReplacesAnEarlierSeedOnly(t *testing.T) {
	b := newBackends(t)
	ctx := context.Background()
	svc := newService(t, b, testConfig(StrategyHybrid, b.prefix))
	first := SeedConfig{Preset: PresetSocial, Users: 30, Seed: 1}
	if _, err := Seed(ctx, b.db, first, nil); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	res, err := Seed(ctx, b.db, SeedConfig{Preset: PresetExperiment, Users: 10}, &progress)
	if err != nil {
		t.Fatalf("a seed over an earlier seed: %v", err)
	}
	if !strings.Contains(progress.String(), "replacing the 30 users of an earlier seed") {
		t.Errorf("progress = %q, want it to say it replaced the earlier seed", progress.String())
	}
	var users int
	if err := b.db.QueryRow(ctx, `SELECT count(*) FROM feed_users`).Scan(&users); err != nil || users != res.Users || users != 13 {
		t.Errorf("%d users after the second seed (%v), want its 13 only", users, err)
	}

	if _, err := svc.CreateUser(ctx, "handmade", "https://img.example/h.png"); err != nil {
		t.Fatal(err)
	}
	_, err = Seed(ctx, b.db, SeedConfig{Preset: PresetExperiment, Users: 10}, nil)
	if err == nil || !strings.Contains(err.Error(), "1 feed users that no seed created") || !strings.Contains(err.Error(), "--reset") {
		t.Fatalf("a seed over a hand-made user: %v, want a refusal naming --reset", err)
	}
	if _, err := Seed(ctx, b.db, SeedConfig{Preset: PresetExperiment, Users: 10, Reset: true}, nil); err != nil {
		t.Fatalf("with Reset: %v", err)
	}
}

// Workers that run while a seed rebuilds the Redis state (the demo seeds
// while the server runs; `baedal feed seed` may run beside a server) get
// the deleted fan-out stream back and deliver the next post.
func TestWorkersDeliverAfterARebuildUnderThem(t *testing.T) {
	b := newBackends(t)
	ctx := context.Background()
	svc := newService(t, b, testConfig(StrategyHybrid, b.prefix))
	startWorkers(t, svc)
	time.Sleep(200 * time.Millisecond) // the consumers block on the stream
	res, err := SeedAndRebuild(ctx, svc, SeedConfig{Preset: PresetExperiment, Users: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPost(t, svc, 1, "after the rebuild")
	waitSettled(t, svc)
	for _, reader := range []int64{res.UserA, res.UserB} {
		if texts := feedTexts(t, svc, reader, 1); len(texts) != 1 || texts[0] != p.Text {
			t.Errorf("user %d's newest post = %v, want %q pushed after the rebuild", reader, texts, p.Text)
		}
	}
}
