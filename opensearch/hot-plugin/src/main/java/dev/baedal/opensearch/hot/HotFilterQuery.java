package dev.baedal.opensearch.hot;

import java.io.IOException;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.SortedNumericDocValues;
import org.apache.lucene.search.ConstantScoreScorer;
import org.apache.lucene.search.ConstantScoreWeight;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.QueryVisitor;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.ScorerSupplier;
import org.apache.lucene.search.TwoPhaseIterator;
import org.apache.lucene.search.Weight;
import org.apache.lucene.search.join.BitSetProducer;
import org.apache.lucene.util.BitSet;

/**
 * The Lucene query behind {@code baedal_hot_shop} and {@code baedal_hot_menu}: a constant-score
 * filter whose approximation is the docs having a doc value ({@code id} for shops,
 * {@code menus.extra_fee} for menus) and whose match reads the shop's entry in the hot table.
 *
 * <p>Invariants: never cacheable (the table changes outside Lucene); equal only to itself, so
 * no cache or rewrite can mistake one table state for another; each scorer owns its doc-values
 * iterators and its {@link HotTable.Row}, so concurrent segment search is safe.
 */
final class HotFilterQuery extends Query {

    static final String ID_FIELD = "id";
    static final String EXTRA_FEE_FIELD = "menus.extra_fee";

    private final HotRows rows;
    private final Boolean open;
    private final Integer maxDeliveryFee;
    private final Double minRating;
    private final Integer maxTotalFee;
    private final BitSetProducer parents; // non-null: menu-level (child docs)

    private HotFilterQuery(HotRows rows, Boolean open, Integer maxDeliveryFee, Double minRating,
                           Integer maxTotalFee, BitSetProducer parents) {
        this.rows = rows;
        this.open = open;
        this.maxDeliveryFee = maxDeliveryFee;
        this.minRating = minRating;
        this.maxTotalFee = maxTotalFee;
        this.parents = parents;
    }

    static HotFilterQuery shop(HotRows rows, Boolean open, Integer maxDeliveryFee, Double minRating) {
        return new HotFilterQuery(rows, open, maxDeliveryFee, minRating, null, null);
    }

    static HotFilterQuery menu(HotRows rows, int maxTotalFee, BitSetProducer parents) {
        return new HotFilterQuery(rows, null, null, null, maxTotalFee, parents);
    }

    private boolean shopMatches(HotTable.Row r) {
        return (open == null || r.open == open)
            && (maxDeliveryFee == null || r.deliveryFee <= maxDeliveryFee)
            && (minRating == null || r.rating >= minRating);
    }

    @Override
    public Weight createWeight(IndexSearcher searcher, ScoreMode scoreMode, float boost) {
        return new ConstantScoreWeight(this, boost) {
            @Override
            public ScorerSupplier scorerSupplier(LeafReaderContext ctx) throws IOException {
                TwoPhaseIterator it = parents == null ? shopIterator(ctx) : menuIterator(ctx);
                if (it == null) {
                    return null;
                }
                return new DefaultScorerSupplier(new ConstantScoreScorer(score(), scoreMode, it));
            }

            @Override
            public boolean isCacheable(LeafReaderContext ctx) {
                return false;
            }
        };
    }

    private TwoPhaseIterator shopIterator(LeafReaderContext ctx) throws IOException {
        SortedNumericDocValues ids = DocValues.getSortedNumeric(ctx.reader(), ID_FIELD);
        HotTable.Row row = new HotTable.Row();
        return new TwoPhaseIterator(ids) {
            @Override
            public boolean matches() throws IOException {
                return rows.readLive(ids.nextValue(), row) && shopMatches(row);
            }

            @Override
            public float matchCost() {
                return 50;
            }
        };
    }

    private TwoPhaseIterator menuIterator(LeafReaderContext ctx) throws IOException {
        BitSet parentDocs = parents.getBitSet(ctx);
        if (parentDocs == null) {
            return null;
        }
        SortedNumericDocValues fees = DocValues.getSortedNumeric(ctx.reader(), EXTRA_FEE_FIELD);
        ParentShop shop = new ParentShop(ctx, parentDocs, rows);
        return new TwoPhaseIterator(fees) {
            @Override
            public boolean matches() throws IOException {
                HotTable.Row r = shop.row(fees.docID());
                return r != null && (long) r.deliveryFee + fees.nextValue() <= maxTotalFee;
            }

            @Override
            public float matchCost() {
                return 60;
            }
        };
    }

    /**
     * Finds a child doc's shop entry: the parent is the next root doc after the child
     * (block join), its {@code id} doc value names the shop. Forward-only: children must come
     * in increasing doc order; the last parent's entry is cached.
     */
    static final class ParentShop {
        private final BitSet parentDocs;
        private final SortedNumericDocValues ids;
        private final HotRows rows;
        private final HotTable.Row row = new HotTable.Row();
        private int lastParent = -1;
        private boolean lastFound;

        ParentShop(LeafReaderContext ctx, BitSet parentDocs, HotRows rows) throws IOException {
            this.parentDocs = parentDocs;
            this.ids = DocValues.getSortedNumeric(ctx.reader(), ID_FIELD);
            this.rows = rows;
        }

        /** The live entry of the child's shop, or null. */
        HotTable.Row row(int childDoc) throws IOException {
            if (childDoc >= parentDocs.length()) {
                return null;
            }
            int parent = parentDocs.nextSetBit(childDoc);
            if (parent == org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS) {
                return null;
            }
            if (parent != lastParent) {
                lastParent = parent;
                lastFound = parent >= ids.docID() && ids.advanceExact(parent) && rows.readLive(ids.nextValue(), row);
            }
            return lastFound ? row : null;
        }
    }

    @Override
    public void visit(QueryVisitor visitor) {
        visitor.visitLeaf(this);
    }

    @Override
    public String toString(String field) {
        return parents == null
            ? "baedal_hot_shop(" + rows.table().index() + ", open=" + open + ", max_delivery_fee=" + maxDeliveryFee + ", min_rating=" + minRating + ")"
            : "baedal_hot_menu(" + rows.table().index() + ", max_total_fee=" + maxTotalFee + ")";
    }

    @Override
    public boolean equals(Object o) {
        return this == o;
    }

    @Override
    public int hashCode() {
        return System.identityHashCode(this);
    }
}
