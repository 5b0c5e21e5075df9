package dev.baedal.opensearch.hot;

/**
 * One shop's hot state as sent by baedal: the whole hot state at one aggregate version, or a
 * delete (a tombstone at that version, hot fields zero).
 *
 * <p>Invariant: {@code id != Long.MIN_VALUE} (the table's empty-slot marker) and
 * {@code version >= 0}; the parser and the table reject anything else.
 */
public record HotEntry(
    long id,
    long version,
    boolean deleted,
    boolean open,
    int deliveryMinutes,
    int deliveryFee,
    double rating,
    int reviewCount
) {
    static HotEntry tombstone(long id, long version) {
        return new HotEntry(id, version, true, false, 0, 0, 0, 0);
    }
}
