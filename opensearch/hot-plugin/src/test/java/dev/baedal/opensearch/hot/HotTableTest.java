package dev.baedal.opensearch.hot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
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
    void rebuildKeepsTombstonesDropsOldEntriesAndGatesReady() {
        AtomicLong clock = new AtomicLong(1_800_000_000_000L);
        HotTable t = new HotTable("i", "u", clock::get);
        t.apply(List.of(live(1, 1, 10), live(2, 1, 20), HotEntry.tombstone(3, 9)));
        assertFalse(t.ready());
        clock.addAndGet((HotTable.KEEP_UPDATES_SECONDS + 1) * 1000);
        long g1 = t.beginRebuild();
        assertEquals(0, t.shops());
        assertEquals(1, t.tombstones());
        t.load(List.of(live(3, 8, 10), live(1, 2, 11))); // scan: 3 is older than its tombstone
        long g2 = t.beginRebuild(); // a second rebuild supersedes the first
        assertFalse(t.finishRebuild(g1, 5));
        assertFalse(t.ready());
        assertTrue(t.finishRebuild(g2, 5));
        assertTrue(t.ready());
        assertEquals(1, t.rebuilds());
    }

    @Test
    void recentUpdatesSurviveARebuildAndArePassedToPeers() {
        AtomicLong clock = new AtomicLong(1_800_000_000_000L);
        HotTable t = new HotTable("i", "u", clock::get);
        t.load(List.of(live(1, 1, 10), live(2, 1, 20))); // from a scan: never "updated"
        clock.addAndGet(1000);
        t.apply(List.of(live(2, 2, 21), live(5, 3, 50), HotEntry.tombstone(6, 4)));
        List<Long> recent = t.recentUpdates().stream().map(HotEntry::id).sorted().toList();
        assertEquals(List.of(2L, 5L, 6L), recent);
        clock.addAndGet((HotTable.KEEP_UPDATES_SECONDS - 2) * 1000); // still inside the window
        t.beginRebuild();
        HotTable.Row r = new HotTable.Row();
        assertFalse(t.read(1, r), "a scanned entry is dropped: the scan brings it back if its document is still there");
        assertTrue(t.readLive(2, r));
        assertEquals(21, r.deliveryMinutes);
        assertTrue(t.readLive(5, r), "an update whose shop document may still be in flight survives");
        assertEquals(3, r.version);
        assertTrue(t.read(6, r) && r.deleted);
        // The scan finds shop 2 at an older version: the update stays.
        assertEquals(new HotTable.Applied(0, 1), t.load(List.of(live(2, 1, 20))));
        clock.addAndGet(3 * 1000); // now outside the window
        assertTrue(t.recentUpdates().isEmpty());
        t.beginRebuild();
        assertFalse(t.read(5, r));
        assertTrue(t.read(6, r) && r.deleted, "tombstones always survive");
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
