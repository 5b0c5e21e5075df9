package eventlog

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
)

// CatalogConfig picks a generated catalog: `baedal gen` and `baedal load`.
type CatalogConfig struct {
	Shops int
	Seed  uint64
	// Out is gen's output file; "" or "-" is stdout.
	Out string
}

// CatalogDefaults returns 1,000 shops with seed 1.
func CatalogDefaults() CatalogConfig { return CatalogConfig{Shops: 1000, Seed: 1} }

// Flags binds --shops, --seed and, when withOut, --out.
func (c *CatalogConfig) Flags(fs *flag.FlagSet, withOut bool) {
	fs.IntVar(&c.Shops, "shops", c.Shops, "number of generated shops (ids 1..N)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "generator seed; the same seed gives the same catalog")
	if withOut {
		fs.StringVar(&c.Out, "out", c.Out, "output file (default stdout)")
	}
}

// Validate names the first invalid field.
func (c *CatalogConfig) Validate() error {
	if c.Shops < 1 || c.Shops > 10_000_000 {
		return fmt.Errorf("shops: got %d, allowed: 1..10000000", c.Shops)
	}
	return nil
}

// WriteCatalog writes the initial catalog as NDJSON: one full shop upsert
// (every shop field and the menus, version 1) per line, shop ids 1..Shops.
func WriteCatalog(w io.Writer, cfg CatalogConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	gen := catalog.NewGenerator(cfg.Seed)
	for i, st := range gen.Shops(cfg.Shops) {
		raw, err := st.UpsertEvent().MarshalJSON()
		if err != nil {
			return fmt.Errorf("gen: encode shop %d: %w", catalog.ShopID(i), err)
		}
		bw.Write(raw)
		if err := bw.WriteByte('\n'); err != nil {
			return fmt.Errorf("gen: write shop %d: %w", catalog.ShopID(i), err)
		}
	}
	return bw.Flush()
}

// LoadCatalog appends the generated catalog's full shop upserts to the log in
// chunks, drawing a progress bar on progress (nil for none). Re-running it
// appends the same version-1 events again; indexers skip them as stale.
func LoadCatalog(ctx context.Context, l *Log, cfg CatalogConfig, progress io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	var bar *bench.Progress
	if progress != nil {
		bar = bench.NewProgress(progress, "load shops", int64(cfg.Shops))
		defer bar.Done()
	}
	gen := catalog.NewGenerator(cfg.Seed)
	chunk := make([]catalog.Event, 0, l.cfg.AppendChunk)
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if _, err := l.Append(ctx, chunk); err != nil {
			return fmt.Errorf("load: %w", err)
		}
		if bar != nil {
			bar.Add(int64(len(chunk)))
		}
		chunk = chunk[:0]
		return nil
	}
	for _, st := range gen.Shops(cfg.Shops) {
		chunk = append(chunk, st.UpsertEvent())
		if len(chunk) == cap(chunk) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
