package dev.baedal.opensearch.hot;

import java.util.concurrent.locks.StampedLock;

/**
 * The in-memory hot table of one concrete shop-head index on this node: shop id to
 * {version, deleted, open, delivery_minutes, delivery_fee, rating, review_count}, mirroring the
 * node's own copy of that index (docs/hot-layout.md, "Consistency").
 *
 * <p>Storage is an open-addressing hash map keyed by {@code long} with parallel primitive arrays
 * (37 bytes a slot, load factor at most 0.75), so a million shops take about 50-100 MB less
 * than boxed records would. A removed key is taken out by backward shifting, so probing always
 * ends at an empty slot.
 *
 * <p>Invariants:
 * <ul>
 *   <li>An entry's version only grows: {@link #apply} ignores an update whose version is lower
 *       than or equal to the stored one ("stale"), tombstones included. So operations applied in
 *       any order, and a scan of the shard merged with them, leave the newest row.</li>
 *   <li>Writers hold the write lock of {@link #lock}; readers use an optimistic read, validated
 *       after copying one entry, and fall back to the read lock, so a reader always sees one
 *       entry as a single write left it (per-entry atomicity), from any number of threads
 *       (concurrent segment search included).</li>
 *   <li>{@link #ready} is true only after a scan of the local shard copy finished and no other
 *       rebuild began since ({@link #beginRebuild} clears it and swaps in an empty store, which
 *       the operations arriving meanwhile and the scan then fill).</li>
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

        void move(int from, int to) {
            keys[to] = keys[from];
            versions[to] = versions[from];
            minutes[to] = minutes[from];
            fees[to] = fees[from];
            ratings[to] = ratings[from];
            reviews[to] = reviews[from];
            flags[to] = flags[from];
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

        void copyFrom(Row o) {
            version = o.version;
            deleted = o.deleted;
            open = o.open;
            deliveryMinutes = o.deliveryMinutes;
            deliveryFee = o.deliveryFee;
            rating = o.rating;
            reviewCount = o.reviewCount;
        }

        /** This row's {@link #rowDigest}, or 0 for a tombstone. */
        long digest(long id) {
            return deleted ? 0 : rowDigest(id, version, open, deliveryMinutes, deliveryFee, rating, reviewCount);
        }
    }

    /** Outcome of {@link #apply}: how many entries changed and how many were stale. */
    public record Applied(int applied, int stale) {}

    private final String index;
    private final String indexUuid;
    private final StampedLock lock = new StampedLock();
    private volatile Store store = new Store(16);
    private volatile boolean ready;
    private volatile String notReadyReason = "the local copy of the shop index is recovering";
    private volatile long rebuilds;
    private volatile long lastRebuildMs = -1;
    private long rebuildGeneration; // guarded by lock
    private boolean refused; // guarded by lock: never ready (see refuse)

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

    /** Why the table is not ready (meaningless while it is). */
    public String notReadyReason() {
        return notReadyReason;
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

    /** Applies entries in order, each one only if its version is newer than the stored one. */
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

    /** Applies one entry if its version is newer than the stored one; returns whether it did. */
    public boolean apply(HotEntry e) {
        long stamp = lock.writeLock();
        try {
            return applyLocked(e);
        } finally {
            lock.unlockWrite(stamp);
        }
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

    /**
     * Removes the entry of a document deleted from the shard (a tombstone past its retention),
     * unless the entry is a live row with a version at or above {@code version}: an index
     * operation that recreated the shop after the delete, whose listener ran first. Returns
     * whether it removed an entry.
     */
    public boolean remove(long id, long version) {
        long stamp = lock.writeLock();
        try {
            Store s = store;
            int i = s.slot(id);
            if (s.keys[i] != id || id == EMPTY) {
                return false;
            }
            if ((s.flags[i] & DELETED) == 0 && s.versions[i] >= version) {
                return false;
            }
            if ((s.flags[i] & DELETED) != 0) {
                s.tombstones--;
            }
            s.used--;
            // Backward-shift deletion (Knuth 6.4, algorithm R): move later keys of the probe run
            // into the hole when their home slot does not lie cyclically in (hole, j].
            int hole = i;
            int j = i;
            while (true) {
                j = (j + 1) & s.mask;
                long k = s.keys[j];
                if (k == EMPTY) {
                    break;
                }
                int home = (int) mix(k) & s.mask;
                boolean inRun = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (!inRun) {
                    s.move(j, hole);
                    hole = j;
                }
            }
            s.keys[hole] = EMPTY;
            return true;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    private Store grow(Store old) {
        Store n = new Store(old.keys.length * 2);
        for (int j = 0; j < old.keys.length; j++) {
            if (old.keys[j] != EMPTY) {
                int i = n.slot(old.keys[j]);
                n.keys[i] = old.keys[j];
                n.versions[i] = old.versions[j];
                n.minutes[i] = old.minutes[j];
                n.fees[i] = old.fees[j];
                n.ratings[i] = old.ratings[j];
                n.reviews[i] = old.reviews[j];
                n.flags[i] = old.flags[j];
            }
        }
        n.used = old.used;
        n.tombstones = old.tombstones;
        store = n;
        return n;
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

    /**
     * An order-independent digest of the live entries: the sum (mod 2^64) of
     * {@link #rowDigest} over every live entry, tombstones left out. Two tables hold the same
     * live rows (ids, versions and hot values) exactly when their digests and {@link #shops}
     * agree, up to a 2^-64 collision; baedal compares it with the digest of the state its events
     * describe (docs/hot-layout.md, "_status"). O(entries) under the read lock, so it is computed
     * for status and rebuild answers only, never for updates.
     */
    public long digest() {
        long stamp = lock.readLock();
        try {
            Store s = store;
            long sum = 0;
            for (int i = 0; i < s.keys.length; i++) {
                if (s.keys[i] != EMPTY && (s.flags[i] & DELETED) == 0) {
                    sum += rowDigest(s.keys[i], s.versions[i], (s.flags[i] & OPEN) != 0, s.minutes[i], s.fees[i],
                        s.ratings[i], s.reviews[i]);
                }
            }
            return sum;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /**
     * The digest of one live row: {@code h = splitmix64(id)}, then for each of version, open (1 or
     * 0), delivery_minutes, delivery_fee, the IEEE 754 bits of rating and review_count in that order
     * {@code h = splitmix64(h + value)}, in wrapping 64-bit arithmetic. baedal's Go side
     * ({@code indexer.HotRowDigest}) computes the same; both are tested against vectors computed
     * independently.
     */
    static long rowDigest(long id, long version, boolean open, int deliveryMinutes, int deliveryFee, double rating,
                          int reviewCount) {
        long h = splitmix64(id);
        h = splitmix64(h + version);
        h = splitmix64(h + (open ? 1 : 0));
        h = splitmix64(h + deliveryMinutes);
        h = splitmix64(h + deliveryFee);
        h = splitmix64(h + Double.doubleToLongBits(rating));
        return splitmix64(h + reviewCount);
    }

    /** The finalizer of SplitMix64 (Steele, Lea and Flood, 2014). */
    static long splitmix64(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** The heap the table's arrays take (the arrays are the whole table but ~100 bytes). */
    public long bytes() {
        return store.bytes();
    }

    /**
     * Starts a rebuild: the table is not ready (with {@code reason}), and its store is replaced
     * by an empty one that the operations arriving from now on and the rebuild's scan fill,
     * merged by version. Returns the generation to pass to {@link #finishRebuild}.
     */
    public long beginRebuild(String reason) {
        long stamp = lock.writeLock();
        try {
            ready = false;
            notReadyReason = reason;
            store = new Store(16);
            return ++rebuildGeneration;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** The current rebuild generation, for a scan that starts without resetting the store. */
    public long generation() {
        long stamp = lock.readLock();
        try {
            return rebuildGeneration;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Calls {@code f} with the id of every live entry, under the read lock. */
    public void forEachLiveId(java.util.function.LongConsumer f) {
        long stamp = lock.readLock();
        try {
            Store s = store;
            for (int i = 0; i < s.keys.length; i++) {
                if (s.keys[i] != EMPTY && (s.flags[i] & DELETED) == 0) {
                    f.accept(s.keys[i]);
                }
            }
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Marks the table not ready, for good or until the next rebuild. */
    public void markNotReady(String reason) {
        long stamp = lock.writeLock();
        try {
            ready = false;
            notReadyReason = reason;
            rebuildGeneration++;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Marks the table not ready for good: its index cannot hold a table, or its copy is gone. */
    public void refuse(String reason) {
        long stamp = lock.writeLock();
        try {
            refused = true;
            ready = false;
            notReadyReason = reason;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Marks the table ready unless another rebuild began after {@code generation}, or it was refused. */
    public boolean finishRebuild(long generation, long tookMs) {
        long stamp = lock.writeLock();
        try {
            if (generation != rebuildGeneration || refused) {
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
