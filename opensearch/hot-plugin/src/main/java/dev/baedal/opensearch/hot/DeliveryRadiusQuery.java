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
import org.opensearch.common.geo.GeoPoint;
import org.opensearch.common.geo.GeoUtils;
import org.opensearch.index.fielddata.IndexGeoPointFieldData;
import org.opensearch.index.fielddata.IndexNumericFieldData;
import org.opensearch.index.fielddata.MultiGeoPointValues;
import org.opensearch.index.fielddata.SortedNumericDoubleValues;

/**
 * The Lucene query behind {@code baedal_within_delivery_radius} ({@link DeliveryRadiusQueryBuilder}):
 * a constant-score filter whose approximation is the documents with a location (shop documents;
 * nested menus have none) and whose match compares the arc distance from the point with the
 * document's own radius.
 *
 * <p>Invariants: each scorer owns its field-data iterators, so concurrent segment search is
 * safe; equal only to itself and never cached, like the script query it replaces.
 */
final class DeliveryRadiusQuery extends Query {

    private final String locationField;
    private final IndexGeoPointFieldData points;
    private final IndexNumericFieldData radii;
    private final double lat;
    private final double lon;

    DeliveryRadiusQuery(String locationField, IndexGeoPointFieldData points, IndexNumericFieldData radii, double lat, double lon) {
        this.locationField = locationField;
        this.points = points;
        this.radii = radii;
        this.lat = lat;
        this.lon = lon;
    }

    @Override
    public Weight createWeight(IndexSearcher searcher, ScoreMode scoreMode, float boost) {
        return new ConstantScoreWeight(this, boost) {
            @Override
            public ScorerSupplier scorerSupplier(LeafReaderContext ctx) throws IOException {
                SortedNumericDocValues located = DocValues.getSortedNumeric(ctx.reader(), locationField);
                MultiGeoPointValues point = points.load(ctx).getGeoPointValues();
                SortedNumericDoubleValues radius = radii.load(ctx).getDoubleValues();
                TwoPhaseIterator it = new TwoPhaseIterator(located) {
                    @Override
                    public boolean matches() throws IOException {
                        int doc = located.docID();
                        if (!point.advanceExact(doc) || point.docValueCount() == 0
                            || !radius.advanceExact(doc) || radius.docValueCount() == 0) {
                            return false;
                        }
                        GeoPoint p = point.nextValue();
                        return GeoUtils.arcDistance(p.lat(), p.lon(), lat, lon) <= radius.nextValue() * 1000;
                    }

                    @Override
                    public float matchCost() {
                        return 40;
                    }
                };
                return new DefaultScorerSupplier(new ConstantScoreScorer(score(), scoreMode, it));
            }

            @Override
            public boolean isCacheable(LeafReaderContext ctx) {
                return false;
            }
        };
    }

    @Override
    public void visit(QueryVisitor visitor) {
        visitor.visitLeaf(this);
    }

    @Override
    public String toString(String field) {
        return DeliveryRadiusQueryBuilder.NAME + "(" + lat + ", " + lon + ")";
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
