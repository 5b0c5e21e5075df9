package eventlog

import (
	"context"
	"slices"
	"testing"

	"github.com/baedal/baedal/catalog"
)

// Appended counts every entry appended to a partition, and Processed the
// entries a group has read and acknowledged: read but pending entries are
// not processed, and a group that does not exist has processed none.
func TestAppendedAndProcessed(t *testing.T) {
	l := newTestLog(t)
	ctx := context.Background()
	var events []catalog.Event
	for shop := int64(1); shop <= 9; shop++ { // three shops per partition
		for v := int64(1); v <= 2; v++ {
			m := int(10 + v)
			events = append(events, catalog.ShopUpsertEvent(shop, v, &catalog.ShopFields{DeliveryMinutes: &m}))
		}
	}
	if _, err := l.Append(ctx, events); err != nil {
		t.Fatal(err)
	}
	appended, err := l.Appended(ctx)
	if err != nil || !slices.Equal(appended, []int64{6, 6, 6}) {
		t.Fatalf("Appended = %v, %v; want 6 on each of 3 partitions", appended, err)
	}
	if done, err := l.Processed(ctx, "nobody"); err != nil || !slices.Equal(done, []int64{0, 0, 0}) {
		t.Fatalf("Processed of a group that does not exist = %v, %v; want zeros", done, err)
	}
	c := l.Consumer("g", 1)
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	read, err := c.ReadNew(ctx, 4, 0)
	if err != nil || len(read) != 4 {
		t.Fatalf("read %d, %v", len(read), err)
	}
	if err := c.Ack(ctx, read[0].ID, read[1].ID, read[2].ID); err != nil {
		t.Fatal(err)
	}
	if done, err := l.Processed(ctx, "g"); err != nil || !slices.Equal(done, []int64{0, 3, 0}) {
		t.Fatalf("Processed after 4 read and 3 acknowledged on partition 1 = %v, %v; want [0 3 0]", done, err)
	}
}
