package dev.baedal.opensearch.hot;

import java.util.concurrent.locks.StampedLock;

/**
 * The in-memory hot table of one concrete shop index on this node: shop id to
 * {version, deleted, open, delivery_minutes, delivery_fee, rating, review_count}.
 *
 * <p>Storage is an open-addressing hash map keyed by {@code long} with parallel primitive arrays
 * (37 bytes a slot, load factor at most 0.75), so a million shops take about 50-100 MB less
 * than boxed records would. Keys are never removed: a delete leaves a tombstone, so probing
 * always ends at an empty slot.
 *
 * <p>Invariants:
 * <ul>
 *   <li>An entry's version only grows: {@link #apply} ignores an update whose version is lower
 *       than or equal to the stored one ("stale"), tombstones included.</li>
 *   <li>Writers hold the write lock of {@link #lock}; readers use an optimistic read, validated
 *       after copying one entry, and fall back to the read lock, so a reader always sees one
 *       entry as a single write left it (per-entry atomicity), from any number of threads
 *       (concurrent segment search included).</li>
 *   <li>{@link #ready} is true only after a rebuild from the shop index finished and no other
 *       rebuild began since ({@link #beginRebuild} clears it and swaps in a fresh store that
 *       keeps only the tombstones, so entries of shops gone from the index do not survive).</li>
 * </ul>
 */
public final class HotTable {

    static final long EMPTY = Long.MIN_VALUE;
    private static final byte DELETED = 1;
    private static final byte OPEN = 2;
    static final int BYTES_PER_SLOT = 8 + 8 + 4 + 4 + 8 + 4 + 1;

    /** Fixed-capacity arrays; replaced (never resized in place) when they fill up. */
    private static final class Store {
        final long[] keys;
        final long[] versions;
        final int[] minutes;
        final int[] fees;
        final double[] ratings;
        final int[] reviews;
        final byte[] flags;
        final int mask;
        int used; // slots holding a key (live or tombstone); guarded by the write lock
        int tombstones;

        Store(int capacity) {
            keys = new long[capacity];
            java.util.Arrays.fill(keys, EMPTY);
            versions = new long[capacity];
            minutes = new int[capacity];
            fees = new int[capacity];
            ratings = new double[capacity];
            reviews = new int[capacity];
            flags = new byte[capacity];
            mask = capacity - 1;
        }

        int slot(long id) {
            int i = (int) mix(id) & mask;
            while (true) {
                long k = keys[i];
                if (k == id || k == EMPTY) {
                    return i;
                }
                i = (i + 1) & mask;
            }
        }

        long bytes() {
            return (long) keys.length * BYTES_PER_SLOT;
        }
    }

    /** A reader-owned, reusable copy of one entry. */
    public static final class Row {
        public long version;
        public boolean deleted;
        public boolean open;
        public int deliveryMinutes;
        public int deliveryFee;
        public double rating;
        public int reviewCount;
    }

    /** Outcome of {@link #apply}: how many entries changed and how many were stale. */
    public record Applied(int applied, int stale) {}

    private final String index;
    private final String indexUuid;
    private final StampedLock lock = new StampedLock();
    private volatile Store store = new Store(16);
    private volatile boolean ready;
    private volatile long rebuilds;
    private volatile long lastRebuildMs = -1;
    private long rebuildGeneration; // guarded by lock
    /** Set once the cluster-state listener started this table's first rebuild. */
    volatile boolean rebuildScheduled;

    public HotTable(String index, String indexUuid) {
        this.index = index;
        this.indexUuid = indexUuid;
    }

    public String index() {
        return index;
    }

    public String indexUuid() {
        return indexUuid;
    }

    public boolean ready() {
        return ready;
    }

    public long rebuilds() {
        return rebuilds;
    }

    public long lastRebuildMs() {
        return lastRebuildMs;
    }

    static long mix(long id) {
        long h = id * 0x9E3779B97F4A7C15L;
        return h ^ (h >>> 32);
    }

    /** Applies entries in order; each one only if its version is newer than the stored one. */
    public Applied apply(Iterable<HotEntry> entries) {
        int applied = 0;
        int stale = 0;
        long stamp = lock.writeLock();
        try {
            for (HotEntry e : entries) {
                if (applyLocked(e)) {
                    applied++;
                } else {
                    stale++;
                }
            }
        } finally {
            lock.unlockWrite(stamp);
        }
        return new Applied(applied, stale);
    }

    private boolean applyLocked(HotEntry e) {
        if (e.id() == EMPTY) {
            throw new IllegalArgumentException("shop id " + EMPTY + " is reserved");
        }
        Store s = store;
        int i = s.slot(e.id());
        if (s.keys[i] == e.id()) {
            if (e.version() <= s.versions[i]) {
                return false;
            }
            if ((s.flags[i] & DELETED) != 0) {
                s.tombstones--;
            }
        } else {
            if ((s.used + 1) * 4L > s.keys.length * 3L) {
                s = grow(s);
                i = s.slot(e.id());
            }
            s.used++;
        }
        // Value first, key last: an optimistic reader that sees the key validates the stamp anyway.
        s.versions[i] = e.version();
        s.minutes[i] = e.deliveryMinutes();
        s.fees[i] = e.deliveryFee();
        s.ratings[i] = e.rating();
        s.reviews[i] = e.reviewCount();
        s.flags[i] = (byte) ((e.deleted() ? DELETED : 0) | (e.open() && !e.deleted() ? OPEN : 0));
        s.keys[i] = e.id();
        if (e.deleted()) {
            s.tombstones++;
        }
        return true;
    }

    private Store grow(Store old) {
        Store n = new Store(old.keys.length * 2);
        copyInto(old, n, false);
        store = n;
        return n;
    }

    private static void copyInto(Store from, Store to, boolean tombstonesOnly) {
        for (int j = 0; j < from.keys.length; j++) {
            long k = from.keys[j];
            if (k == EMPTY || (tombstonesOnly && (from.flags[j] & DELETED) == 0)) {
                continue;
            }
            int i = to.slot(k);
            to.keys[i] = k;
            to.versions[i] = from.versions[j];
            to.minutes[i] = from.minutes[j];
            to.fees[i] = from.fees[j];
            to.ratings[i] = from.ratings[j];
            to.reviews[i] = from.reviews[j];
            to.flags[i] = from.flags[j];
            to.used++;
            if ((from.flags[j] & DELETED) != 0) {
                to.tombstones++;
            }
        }
    }

    /**
     * Copies the entry of {@code id} into {@code row}; returns false when the table has no
     * entry (live or tombstone) for it. Safe with concurrent writers.
     */
    public boolean read(long id, Row row) {
        long stamp = lock.tryOptimisticRead();
        boolean found = readUnlocked(id, row);
        if (lock.validate(stamp)) {
            return found;
        }
        stamp = lock.readLock();
        try {
            return readUnlocked(id, row);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Like {@link #read} but only for live (not deleted) entries. */
    public boolean readLive(long id, Row row) {
        return read(id, row) && !row.deleted;
    }

    private boolean readUnlocked(long id, Row row) {
        Store s = store;
        int i = s.slot(id);
        if (s.keys[i] != id || id == EMPTY) {
            return false;
        }
        byte f = s.flags[i];
        row.version = s.versions[i];
        row.deleted = (f & DELETED) != 0;
        row.open = (f & OPEN) != 0;
        row.deliveryMinutes = s.minutes[i];
        row.deliveryFee = s.fees[i];
        row.rating = s.ratings[i];
        row.reviewCount = s.reviews[i];
        return true;
    }

    /** Live shops (entries minus tombstones). */
    public int shops() {
        long stamp = lock.readLock();
        try {
            return store.used - store.tombstones;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    public int tombstones() {
        long stamp = lock.readLock();
        try {
            return store.tombstones;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** The heap the table's arrays take (the arrays are the whole table but ~100 bytes). */
    public long bytes() {
        return store.bytes();
    }

    /**
     * Starts a rebuild: the table is not ready, and its store is replaced by one holding only the
     * tombstones, so the scan and the updates that arrive meanwhile merge by version.
     * Returns the generation to pass to {@link #finishRebuild}.
     */
    public long beginRebuild() {
        long stamp = lock.writeLock();
        try {
            ready = false;
            Store old = store;
            int cap = 16;
            while (cap * 3L < Math.max(old.used, 1) * 4L) {
                cap <<= 1;
            }
            Store n = new Store(cap);
            copyInto(old, n, true);
            store = n;
            return ++rebuildGeneration;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Marks the table ready unless another rebuild began after {@code generation}. */
    public boolean finishRebuild(long generation, long tookMs) {
        long stamp = lock.writeLock();
        try {
            if (generation != rebuildGeneration) {
                return false;
            }
            rebuilds++;
            lastRebuildMs = tookMs;
            ready = true;
            return true;
        } finally {
            lock.unlockWrite(stamp);
        }
    }
}
