package dev.baedal.opensearch.hot;

import java.util.Arrays;

/**
 * One search request's view of a hot table: the first read of a shop copies its row here, and
 * every later read in the same request (filter, sort, fetch) gets that copy. So a shard request
 * that filters on {@code open}, sorts on {@code delivery_minutes} and returns the fields sees
 * one version of each row, even while the table changes underneath.
 *
 * <p>Storage is an open-addressing map with parallel primitive arrays, as in {@link HotTable}.
 * Invariants: rows are copied under this object's monitor (concurrent segment search may read
 * from several threads); a shop missing from the table, or deleted, is remembered as not live.
 */
public final class HotRows {

    private final HotTable table;
    private final HotTable.Row scratch = new HotTable.Row();
    private long[] keys;
    private boolean[] live;
    private boolean[] open;
    private long[] versions;
    private int[] minutes;
    private int[] fees;
    private double[] ratings;
    private int[] reviews;
    private int size;

    HotRows(HotTable table) {
        this.table = table;
        allocate(64);
    }

    HotTable table() {
        return table;
    }

    private void allocate(int n) {
        keys = new long[n];
        Arrays.fill(keys, HotTable.EMPTY);
        live = new boolean[n];
        open = new boolean[n];
        versions = new long[n];
        minutes = new int[n];
        fees = new int[n];
        ratings = new double[n];
        reviews = new int[n];
    }

    /** Copies the request's row of a live shop into {@code row}; false if the shop is missing or deleted. */
    public synchronized boolean readLive(long id, HotTable.Row row) {
        if (id == HotTable.EMPTY) {
            return false;
        }
        int i = slot(id);
        if (keys[i] != id) {
            if ((size + 1) * 2 > keys.length) {
                grow();
                i = slot(id);
            }
            boolean found = table.read(id, scratch);
            put(i, id, found && !scratch.deleted, scratch.open, scratch.version, scratch.deliveryMinutes, scratch.deliveryFee,
                scratch.rating, scratch.reviewCount);
            size++;
        }
        if (!live[i]) {
            return false;
        }
        row.version = versions[i];
        row.deleted = false;
        row.open = open[i];
        row.deliveryMinutes = minutes[i];
        row.deliveryFee = fees[i];
        row.rating = ratings[i];
        row.reviewCount = reviews[i];
        return true;
    }

    private void put(int i, long id, boolean isLive, boolean isOpen, long version, int min, int fee, double rating, int rev) {
        keys[i] = id;
        live[i] = isLive;
        open[i] = isOpen;
        versions[i] = version;
        minutes[i] = min;
        fees[i] = fee;
        ratings[i] = rating;
        reviews[i] = rev;
    }

    private int slot(long id) {
        int mask = keys.length - 1;
        int i = (int) HotTable.mix(id) & mask;
        while (keys[i] != id && keys[i] != HotTable.EMPTY) {
            i = (i + 1) & mask;
        }
        return i;
    }

    private void grow() {
        long[] k = keys;
        boolean[] l = live;
        boolean[] o = open;
        long[] v = versions;
        int[] m = minutes;
        int[] f = fees;
        double[] r = ratings;
        int[] c = reviews;
        allocate(k.length * 2);
        for (int j = 0; j < k.length; j++) {
            if (k[j] != HotTable.EMPTY) {
                put(slot(k[j]), k[j], l[j], o[j], v[j], m[j], f[j], r[j], c[j]);
            }
        }
    }
}
