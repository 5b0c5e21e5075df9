package dev.baedal.opensearch.hot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The table's rules: versions only grow, tombstones stick, readers see whole entries. */
class HotTableTest {

    static HotEntry live(long id, long v, int minutes) {
        return new HotEntry(id, v, false, true, minutes, minutes * 100, minutes / 10.0, minutes * 2);
    }

    @Test
    void newerVersionWinsOlderIsStale() {
        HotTable t = new HotTable("i", "u");
        assertEquals(new HotTable.Applied(1, 0), t.apply(List.of(live(1, 5, 30))));
        assertEquals(new HotTable.Applied(0, 2), t.apply(List.of(live(1, 5, 40), live(1, 4, 50))));
        HotTable.Row r = new HotTable.Row();
        assertTrue(t.readLive(1, r));
        assertEquals(30, r.deliveryMinutes);
        assertEquals(5, r.version);
        assertEquals(new HotTable.Applied(1, 0), t.apply(List.of(live(1, 6, 45))));
        assertTrue(t.readLive(1, r));
        assertEquals(45, r.deliveryMinutes);
        assertFalse(t.read(2, r));
    }

    @Test
    void deleteLeavesTombstoneThatOlderUpdatesCannotRevive() {
        HotTable t = new HotTable("i", "u");
        t.apply(List.of(live(7, 1, 30), HotEntry.tombstone(7, 3)));
        HotTable.Row r = new HotTable.Row();
        assertTrue(t.read(7, r));
        assertTrue(r.deleted);
        assertFalse(t.readLive(7, r));
        assertEquals(new HotTable.Applied(0, 1), t.apply(List.of(live(7, 2, 30))));
        assertEquals(0, t.shops());
        assertEquals(1, t.tombstones());
        assertEquals(new HotTable.Applied(1, 0), t.apply(List.of(live(7, 4, 30))));
        assertEquals(1, t.shops());
        assertEquals(0, t.tombstones());
    }

    @Test
    void rebuildStartsEmptyAndOnlyItsOwnGenerationMakesItReady() {
        HotTable t = new HotTable("i", "u");
        t.apply(List.of(live(1, 1, 10), live(2, 1, 20), HotEntry.tombstone(3, 9)));
        assertFalse(t.ready(), "a table is not ready before its first scan");
        assertTrue(t.finishRebuild(t.generation(), 3));
        assertTrue(t.ready());
        long g1 = t.beginRebuild("r1");
        assertFalse(t.ready());
        assertEquals("r1", t.notReadyReason());
        assertEquals(0, t.shops());
        assertEquals(0, t.tombstones());
        t.apply(List.of(live(1, 3, 11))); // an operation during the scan
        t.apply(List.of(live(1, 2, 10), live(2, 2, 20))); // the scan: shop 1 is older than the operation
        HotTable.Row r = new HotTable.Row();
        assertTrue(t.readLive(1, r));
        assertEquals(3, r.version);
        long g2 = t.beginRebuild("r2"); // a second rebuild supersedes the first
        assertFalse(t.finishRebuild(g1, 5));
        assertFalse(t.ready());
        assertTrue(t.finishRebuild(g2, 5));
        assertTrue(t.ready());
        assertEquals(2, t.rebuilds());
        t.markNotReady("closed");
        assertFalse(t.finishRebuild(g2, 5), "a table marked not ready stays so until a new rebuild");
    }

    /** Ids that collide in a small table, so removals must shift later keys of a probe run back. */
    @Test
    void removeKeepsEveryOtherKeyReachable() {
        HotTable t = new HotTable("i", "u");
        List<HotEntry> batch = new ArrayList<>();
        for (long id = 1; id <= 3000; id++) {
            batch.add(id % 3 == 0 ? HotEntry.tombstone(id, 4) : live(id, 4, (int) (id % 90)));
        }
        t.apply(batch);
        HotTable.Row r = new HotTable.Row();
        assertFalse(t.remove(1, 4), "a live row at or above the delete's version is a recreation: kept");
        assertTrue(t.remove(2, 5), "a live row below the delete's version goes");
        for (long id = 3; id <= 3000; id += 3) {
            assertTrue(t.remove(id, 5), "tombstone " + id);
        }
        assertFalse(t.remove(3, 5), "already gone");
        assertEquals(0, t.tombstones());
        assertEquals(3000 - 1000 - 1, t.shops());
        for (long id = 1; id <= 3000; id++) {
            boolean expected = id != 2 && id % 3 != 0;
            assertEquals(expected, t.read(id, r), "shop " + id);
            if (expected) {
                assertEquals(id % 90, r.deliveryMinutes);
            }
        }
    }

    /** A request's rows stay as it first read them while the table moves on. */
    @Test
    void rowsOfARequestAreFixedAtTheirFirstRead() {
        HotTable t = new HotTable("i", "u");
        t.apply(List.of(live(1, 1, 10), live(2, 1, 20)));
        HotRows rows = new HotRows(t);
        HotTable.Row r = new HotTable.Row();
        assertTrue(rows.readLive(1, r));
        assertFalse(rows.readLive(3, r));
        t.apply(List.of(live(1, 2, 99), live(3, 1, 30), HotEntry.tombstone(2, 5)));
        assertTrue(rows.readLive(1, r));
        assertEquals(10, r.deliveryMinutes, "the row first read");
        assertFalse(rows.readLive(3, r), "missing at its first read: missing for the request");
        assertFalse(rows.readLive(2, r), "first read after its delete");
        HotRows next = new HotRows(t);
        assertTrue(next.readLive(1, r));
        assertEquals(99, r.deliveryMinutes, "a new request sees the new row");
        for (long id = 10; id < 5000; id++) { // growth keeps earlier rows
            next.readLive(id, r);
        }
        assertTrue(next.readLive(1, r));
        assertEquals(99, r.deliveryMinutes);
        assertTrue(next.readLive(3, r));
    }

    @Test
    void growsAndFindsEveryKey() {
        HotTable t = new HotTable("i", "u");
        List<HotEntry> batch = new ArrayList<>();
        for (long id = -50_000; id < 50_000; id++) {
            batch.add(live(id * 7919, 1, (int) Math.floorMod(id, 100)));
        }
        t.apply(batch);
        assertEquals(100_000, t.shops());
        HotTable.Row r = new HotTable.Row();
        for (long id = -50_000; id < 50_000; id++) {
            assertTrue(t.readLive(id * 7919, r));
            assertEquals(Math.floorMod(id, 100), r.deliveryMinutes);
        }
    }

    /** Writers keep every entry's fields in step (fee = minutes*100); readers must never see a mix. */
    @Test
    void concurrentReadersSeeWholeEntries() throws Exception {
        HotTable t = new HotTable("i", "u");
        int shops = 2000;
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<String> bad = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            for (long v = 1; v < 400 && bad.get() == null; v++) {
                List<HotEntry> batch = new ArrayList<>();
                for (long id = 0; id < shops; id++) {
                    batch.add(live(id + (v % 3) * shops, v, (int) (v % 97)));
                }
                t.apply(batch);
            }
            stop.set(true);
        });
        List<Thread> readers = new ArrayList<>();
        for (int k = 0; k < 3; k++) {
            readers.add(new Thread(() -> {
                HotTable.Row r = new HotTable.Row();
                while (!stop.get()) {
                    for (long id = 0; id < 3 * shops; id++) {
                        if (t.read(id, r) && (r.deliveryFee != r.deliveryMinutes * 100 || r.reviewCount != r.deliveryMinutes * 2
                            || r.version % 97 != r.deliveryMinutes)) {
                            bad.set("torn entry " + id + ": v" + r.version + " " + r.deliveryMinutes + "/" + r.deliveryFee);
                        }
                    }
                }
            }));
        }
        readers.forEach(Thread::start);
        writer.start();
        writer.join();
        for (Thread r : readers) {
            r.join();
        }
        assertEquals(null, bad.get());
    }

    /** Prints the heap of one million shops: the arrays' size and the measured heap growth. */
    @Test
    void memoryPerMillionShops() {
        System.gc();
        Runtime rt = Runtime.getRuntime();
        long before = rt.totalMemory() - rt.freeMemory();
        HotTable t = new HotTable("i", "u");
        List<HotEntry> batch = new ArrayList<>(10_000);
        for (long id = 1; id <= 1_000_000; id++) {
            batch.add(live(id * 31, 1, 30));
            if (batch.size() == 10_000) {
                t.apply(batch);
                batch.clear();
            }
        }
        System.gc();
        long after = rt.totalMemory() - rt.freeMemory();
        assertEquals(1_000_000, t.shops());
        System.out.printf("baedal-hot: 1,000,000 shops: table arrays %d bytes (%.1f bytes/shop), measured heap growth ~%d bytes%n",
            t.bytes(), t.bytes() / 1e6, after - before);
        assertTrue(t.bytes() < 120_000_000L);
    }

    /**
     * The digest against vectors computed by an independent implementation (Python, in the
     * commit that added it); indexer.TestHotRowDigestVectors holds the Go side to the same.
     */
    @Test
    void digestMatchesIndependentVectorsAndIgnoresOrderAndTombstones() {
        assertEquals(0x76c8f2b523da1b2dL, HotTable.rowDigest(1, 7, true, 30, 2000, 4.5, 120));
        assertEquals(0x19e7a11e1a78eb3bL, HotTable.rowDigest(9223372036854774L, 3, false, 45, 0, 3.9, 0));
        HotEntry a = new HotEntry(1, 7, false, true, 30, 2000, 4.5, 120);
        HotEntry b = new HotEntry(9223372036854774L, 3, false, false, 45, 0, 3.9, 0);
        HotTable t = new HotTable("i", "u");
        assertEquals(0L, t.digest());
        t.apply(List.of(b, a, HotEntry.tombstone(5, 2)));
        HotTable u = new HotTable("i", "u");
        u.apply(List.of(a, b));
        assertEquals(0x90b093d33e530668L, t.digest());
        assertEquals(t.digest(), u.digest());
        u.apply(List.of(new HotEntry(1, 8, false, true, 30, 2000, 4.5, 121)));
        assertTrue(t.digest() != u.digest(), "a newer row with another review_count must change the digest");
        u.apply(List.of(HotEntry.tombstone(1, 9)));
        assertEquals(HotTable.rowDigest(9223372036854774L, 3, false, 45, 0, 3.9, 0), u.digest());
    }
}
