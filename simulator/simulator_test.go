package simulator

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestRestartKeepsVersionsGrowing runs the simulator twice on one event log
// and checks that the second run continues every shop's version sequence
// instead of replaying versions the indexer already has.
func TestRestartKeepsVersionsGrowing(t *testing.T) {
	st := stacktest.Require(t)
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisAddr})
	defer rdb.Close()
	logCfg := eventlog.Defaults()
	logCfg.Prefix = stacktest.Namespace(t) + ":"
	logCfg.Partitions = 1
	evlog, err := eventlog.New(logCfg, rdb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Shops: 50, Seed: 7, Rate: 400}
	run := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		if err := New(cfg, evlog, slogDiscard(), nil).Run(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	run()
	run()

	msgs, err := rdb.XRange(context.Background(), evlog.StreamKey(0), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	loads, last := 0, map[int64]int64{}
	for _, m := range msgs {
		var ev catalog.Event
		raw, _ := m.Values["e"].(string)
		if err := ev.UnmarshalJSON([]byte(raw)); err != nil {
			t.Fatalf("entry %s: %v (%v)", m.ID, err, m.Values)
		}
		if ev.Menus != nil && ev.Version == 1 {
			loads++
		}
		id := ev.AggregateID()
		if ev.Version <= last[id] {
			t.Fatalf("shop %d: version %d after %d: the restart replayed old versions", id, ev.Version, last[id])
		}
		last[id] = ev.Version
	}
	if loads != cfg.Shops {
		t.Errorf("the catalog was loaded %d times' worth of shops (%d), want exactly once (%d)", loads/cfg.Shops, loads, cfg.Shops)
	}
	if len(msgs) < cfg.Shops+100 {
		t.Errorf("only %d entries: the simulator appended almost no live events", len(msgs))
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
