// Package bulkload is how the benchmarks load a generated catalog into fresh
// layouts when the catalog is large (`bench index --bulk-load`, `bench
// search --bulk-load`, `bench scale`): the indexer's own documents
// (indexer.Indexer.Load: Apply of each shop's upsert event without the read
// of documents that cannot exist yet), in batches sent by several
// goroutines per layout and every layout at once, with refresh off and no
// replicas while they go in (layout.Config.PauseForBulkLoad), both restored
// and the indices refreshed before Load returns.
//
// Invariant: every layout gets every shop of [From, To) at the generator's
// version, as the same documents the indexer writes, and its indexer holds
// their states afterwards (as after Apply); a failed batch fails the load.
package bulkload

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// Options say what to load where.
type Options struct {
	OS     *osapi.Client
	Layout layout.Config
	// Indexers are one per layout, each writing to Layout's indices.
	Indexers []*indexer.Indexer
	// Seed of the generator; the shops of indexes [From, To) are loaded
	// (ids From+1 .. To).
	Seed     uint64
	From, To int
	// Batch is the shops per indexer.Load (0: DefaultBatch); InFlight the
	// batches each layout writes at once (0: DefaultInFlight).
	Batch, InFlight int
	// Each, if set, sees every shop before it is written, in index order.
	Each func(catalog.ShopState)
	// Progress receives a progress line (nil: none).
	Progress io.Writer
}

// DefaultBatch is 250 shops: about 2 MB of nested documents per bulk, under
// the indexer's 4 MB chunk, so one Load is one bulk request per part.
const DefaultBatch = 250

// DefaultInFlight keeps two bulk requests per layout in flight: one is
// being analysed by OpenSearch while the next is encoded and sent.
const DefaultInFlight = 2

// Load loads the shops into every layout of o.Indexers.
func Load(ctx context.Context, o Options) (err error) {
	if o.From < 0 || o.To < o.From {
		return fmt.Errorf("bulkload: shops [%d, %d): want 0 <= from <= to", o.From, o.To)
	}
	if o.To == o.From {
		return nil
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.InFlight <= 0 {
		o.InFlight = DefaultInFlight
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	kinds := make([]layout.Kind, len(o.Indexers))
	for i, ix := range o.Indexers {
		kinds[i] = ix.Kind()
	}
	restore, err := o.Layout.PauseForBulkLoad(ctx, o.OS, kinds...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, restore(context.WithoutCancel(ctx))) }()

	prog := bench.NewProgress(o.Progress, fmt.Sprintf("bulk load shops %d..%d into %s", o.From+1, o.To, layout.JoinKinds(kinds)), int64(o.To-o.From)*int64(len(kinds)))
	defer prog.Done()
	g, gctx := errgroup.WithContext(ctx)
	queues := make([]chan []catalog.ShopState, len(o.Indexers))
	for i, ix := range o.Indexers {
		queues[i] = make(chan []catalog.ShopState, o.InFlight)
		for range o.InFlight {
			g.Go(func() error {
				for batch := range queues[i] {
					if err := loadBatch(gctx, ix, batch); err != nil {
						return err
					}
					prog.Add(int64(len(batch)))
				}
				return nil
			})
		}
	}
	g.Go(func() error {
		defer func() {
			for _, q := range queues {
				close(q)
			}
		}()
		gen := catalog.NewGenerator(o.Seed)
		batch := make([]catalog.ShopState, 0, o.Batch)
		for i := o.From; i < o.To; i++ {
			st := gen.Shop(i)
			if o.Each != nil {
				o.Each(st)
			}
			batch = append(batch, st)
			if len(batch) < o.Batch && i < o.To-1 {
				continue
			}
			// Every layout reads the same batch; none modifies it.
			for _, q := range queues {
				select {
				case q <- batch:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			batch = make([]catalog.ShopState, 0, o.Batch)
		}
		return nil
	})
	return g.Wait()
}

// loadBatch writes one batch into one layout; a shop the layout refused
// fails the load.
func loadBatch(ctx context.Context, ix *indexer.Indexer, batch []catalog.ShopState) error {
	st, err := ix.Load(ctx, batch)
	if err != nil {
		return fmt.Errorf("bulkload: %d shops from id %d into %s: %w", len(batch), batch[0].Shop.ID, ix.Kind(), err)
	}
	if len(st.Rejected) > 0 {
		r := st.Rejected[0]
		return fmt.Errorf("bulkload: %s refused shop %d: %s (%d refused in the batch)", ix.Kind(), r.ShopID, r.Reason, len(st.Rejected))
	}
	return nil
}
