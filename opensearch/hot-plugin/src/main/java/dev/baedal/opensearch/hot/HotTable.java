package dev.baedal.opensearch.hot;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.StampedLock;
import java.util.function.LongSupplier;

/**
 * The in-memory hot table of one concrete shop index on this node: shop id to
 * {version, deleted, open, delivery_minutes, delivery_fee, rating, review_count}.
 *
 * <p>Storage is an open-addressing hash map keyed by {@code long} with parallel primitive arrays
 * (41 bytes a slot, load factor at most 0.75), so a million shops take about 50-100 MB less
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
 *       keeps the tombstones and the entries an update wrote in the last {@link #KEEP_UPDATES_SECONDS}, so
 *       entries of shops gone from the index do not survive, but an update whose shop document
 *       is still being written does).</li>
 *   <li>Each slot records when an update (not a rebuild's scan) last wrote it, in seconds:
 *       {@link #recentUpdates} gives a rebuilding peer the rows it may have missed.</li>
 * </ul>
 */
public final class HotTable {

    static final long EMPTY = Long.MIN_VALUE;
    private static final byte DELETED = 1;
    private static final byte OPEN = 2;
    static final int BYTES_PER_SLOT = 8 + 8 + 4 + 4 + 8 + 4 + 4 + 1;

    /**
     * How long an update survives a rebuild without its shop document: longer than baedal's
     * indexer retries one batch ({@code --indexer-retry-for}, at most 5 minutes when the hot
     * layout runs), after which the batch, and its table rows, are sent again.
     */
    static final long KEEP_UPDATES_SECONDS = TimeUnit.MINUTES.toSeconds(10);

    /** Fixed-capacity arrays; replaced (never resized in place) when they fill up. */
    private static final class Store {
        final long[] keys;
        final long[] versions;
        final int[] minutes;
        final int[] fees;
        final double[] ratings;
        final int[] reviews;
        final int[] updatedAt; // seconds of the clock when an update last wrote the slot, 0 = never
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
            updatedAt = new int[capacity];
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
    private final LongSupplier clockMillis;
    private final StampedLock lock = new StampedLock();
    private volatile Store store = new Store(16);
    private volatile boolean ready;
    private volatile long rebuilds;
    private volatile long lastRebuildMs = -1;
    private long rebuildGeneration; // guarded by lock
    /** Set once the cluster-state listener started this table's first rebuild. */
    volatile boolean rebuildScheduled;

    public HotTable(String index, String indexUuid) {
        this(index, indexUuid, System::currentTimeMillis);
    }

    HotTable(String index, String indexUuid, LongSupplier clockMillis) {
        this.index = index;
        this.indexUuid = indexUuid;
        this.clockMillis = clockMillis;
    }

    /** Seconds since 2020-01-01 (fits an int until 2088); at least 1, since 0 means never. */
    private int nowSeconds() {
        return (int) Math.max(1, clockMillis.getAsLong() / 1000 - 1_577_836_800L);
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

    /**
     * Applies an update from baedal: entries in order, each one only if its version is newer than
     * the stored one. An applied entry is marked as updated now.
     */
    public Applied apply(Iterable<HotEntry> entries) {
        return apply(entries, nowSeconds());
    }

    /** Applies rows read from the shop index by a rebuild: as {@link #apply}, not marked updated. */
    public Applied load(Iterable<HotEntry> entries) {
        return apply(entries, 0);
    }

    private Applied apply(Iterable<HotEntry> entries, int updatedAt) {
        int applied = 0;
        int stale = 0;
        long stamp = lock.writeLock();
        try {
            for (HotEntry e : entries) {
                if (applyLocked(e, updatedAt)) {
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

    private boolean applyLocked(HotEntry e, int updatedAt) {
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
        if (updatedAt != 0) {
            s.updatedAt[i] = updatedAt;
        }
        s.keys[i] = e.id();
        if (e.deleted()) {
            s.tombstones++;
        }
        return true;
    }

    private Store grow(Store old) {
        Store n = new Store(old.keys.length * 2);
        copyInto(old, n, 0);
        store = n;
        return n;
    }

    /**
     * Copies the tombstones and the live entries updated at or after {@code updatedSince}
     * (0: every entry).
     */
    private static void copyInto(Store from, Store to, int updatedSince) {
        for (int j = 0; j < from.keys.length; j++) {
            long k = from.keys[j];
            if (k == EMPTY || ((from.flags[j] & DELETED) == 0 && from.updatedAt[j] < updatedSince)) {
                continue;
            }
            int i = to.slot(k);
            to.keys[i] = k;
            to.versions[i] = from.versions[j];
            to.minutes[i] = from.minutes[j];
            to.fees[i] = from.fees[j];
            to.ratings[i] = from.ratings[j];
            to.reviews[i] = from.reviews[j];
            to.updatedAt[i] = from.updatedAt[j];
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
     * The live entries and tombstones that an update wrote in the last {@link #KEEP_UPDATES_SECONDS}:
     * what a peer's rebuild merges, so that a row broadcast before that peer's table existed is
     * not lost while its shop document is still being written.
     */
    public List<HotEntry> recentUpdates() {
        int since = nowSeconds() - (int) KEEP_UPDATES_SECONDS;
        List<HotEntry> out = new ArrayList<>();
        long stamp = lock.readLock();
        try {
            Store s = store;
            for (int i = 0; i < s.keys.length; i++) {
                if (s.keys[i] == EMPTY || s.updatedAt[i] == 0 || s.updatedAt[i] < since) {
                    continue;
                }
                boolean deleted = (s.flags[i] & DELETED) != 0;
                out.add(new HotEntry(s.keys[i], s.versions[i], deleted, (s.flags[i] & OPEN) != 0,
                    s.minutes[i], s.fees[i], s.ratings[i], s.reviews[i]));
            }
        } finally {
            lock.unlockRead(stamp);
        }
        return out;
    }

    /**
     * Starts a rebuild: the table is not ready, and its store is replaced by one holding the
     * tombstones and the entries updated in the last {@link #KEEP_UPDATES_SECONDS}, so the scan and the
     * updates that arrive meanwhile merge by version with them. Returns the generation to pass to
     * {@link #finishRebuild}.
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
            copyInto(old, n, Math.max(1, nowSeconds() - (int) KEEP_UPDATES_SECONDS));
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
