package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.SortedNumericDocValues;
import org.apache.lucene.search.Scorable;
import org.apache.lucene.search.SortField;
import org.opensearch.common.geo.GeoPoint;
import org.opensearch.common.geo.GeoUtils;
import org.opensearch.core.common.io.stream.StreamInput;
import org.opensearch.core.common.io.stream.StreamOutput;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.core.xcontent.XContentParser;
import org.opensearch.index.fielddata.FieldData;
import org.opensearch.index.fielddata.IndexGeoPointFieldData;
import org.opensearch.index.fielddata.IndexNumericFieldData;
import org.opensearch.index.fielddata.MultiGeoPointValues;
import org.opensearch.index.fielddata.NumericDoubleValues;
import org.opensearch.index.fielddata.SortedNumericDoubleValues;
import org.opensearch.index.fielddata.fieldcomparator.DoubleValuesComparatorSource;
import org.opensearch.index.mapper.MappedFieldType;
import org.opensearch.index.query.QueryRewriteContext;
import org.opensearch.index.query.QueryShardContext;
import org.opensearch.index.query.QueryShardException;
import org.opensearch.search.DocValueFormat;
import org.opensearch.search.MultiValueMode;
import org.opensearch.search.sort.BucketedSort;
import org.opensearch.search.sort.SortBuilder;
import org.opensearch.search.sort.SortFieldAndFormat;
import org.opensearch.search.sort.SortOrder;

/**
 * {@code {"baedal_hot_rank": {"table": T, "params": {...}}}}: sorts shops by baedal's relevance
 * formula (docs/search.md, Go package {@code searcher/rank}), highest first, over the query's
 * score (the text score), the hot fields of table T ({@code open}, {@code delivery_minutes},
 * {@code rating}, {@code review_count}) and the document's {@code location} and
 * {@code delivery_radius_km} (a shop delivers when the arc distance is at most its radius × 1000,
 * the test of {@link DeliveryRadiusQueryBuilder}). The params are the ones the Painless script of
 * the other layouts gets: the weights {@code w_open, w_delivers, w_text, w_dist, dist_zero, w_eta,
 * eta_zero, w_rating, prior_rating, prior_reviews}, and {@code has_text}, {@code has_loc} with
 * {@code lat}, {@code lon}.
 *
 * <p>Invariants: {@link Formula#score} adds the same double terms in the same order as the
 * Painless script and Go's {@code rank.Config.Score}, so the layouts sort alike; with
 * {@code has_text} the request's sort must also hold a {@code _score} key (baedal puts it last),
 * so that the query phase computes scores (read through the comparator's scorer). The SortField is a plain {@link SortField} over a {@link DoubleValuesComparatorSource}
 * named {@code _baedal_hot_rank} with skipping disabled, like {@link HotSortBuilder}. A shop
 * missing from the table sorts last ({@code -Double.MAX_VALUE}). Not ready answers 503; the shard
 * request cache is off. Table rows are read only through {@link TableRows}.
 */
public final class HotRankSortBuilder extends SortBuilder<HotRankSortBuilder> {

    public static final String NAME = "baedal_hot_rank";
    static final String SORT_FIELD_NAME = "_baedal_hot_rank";
    static final String LOCATION_FIELD = "location";
    static final String RADIUS_FIELD = "delivery_radius_km";

    private final HotTables tables;
    private final String table;
    private final Formula formula;

    public HotRankSortBuilder(HotTables tables, String table, Formula formula) {
        this.tables = tables;
        this.table = Objects.requireNonNull(table);
        this.formula = Objects.requireNonNull(formula);
        this.order = SortOrder.DESC;
    }

    public HotRankSortBuilder(StreamInput in, HotTables tables) throws IOException {
        this.tables = tables;
        this.table = in.readString();
        this.formula = Formula.read(in);
        this.order = SortOrder.DESC;
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        out.writeString(table);
        formula.writeTo(out);
    }

    /** The formula's parameters; {@link #score} is the formula. */
    public record Formula(double wOpen, double wDelivers, double wText, double wDist, double distZero, double wEta, double etaZero,
                          double wRating, double priorRating, double priorReviews,
                          boolean hasText, boolean hasLoc, double lat, double lon) {

        /** The relevance of one shop, term by term as Painless and Go compute it. */
        public double score(double text, boolean open, double distanceM, boolean delivers, int deliveryMinutes, double rating,
                            int reviews) {
            double o = open ? wOpen : 0.0;
            double t = hasText ? wText * text : 0.0;
            double d = 0.0;
            double dist = 0.0;
            if (hasLoc) {
                if (delivers) {
                    d = wDelivers;
                }
                dist = wDist * (1.0 - distanceM / distZero); // not clamped: a metre is worth the same at any distance
            }
            double y = 1.0 - (double) deliveryMinutes / etaZero;
            double eta = wEta * (y > 0 ? y : 0.0);
            double n = reviews;
            double k = priorReviews;
            double bayes = k + n > 0 ? (k * priorRating + n * rating) / (k + n) : rating;
            double r = wRating * bayes;
            return o + d + t + dist + eta + r;
        }

        static Formula read(StreamInput in) throws IOException {
            return new Formula(in.readDouble(), in.readDouble(), in.readDouble(), in.readDouble(), in.readDouble(), in.readDouble(),
                in.readDouble(), in.readDouble(), in.readDouble(), in.readDouble(), in.readBoolean(), in.readBoolean(),
                in.readDouble(), in.readDouble());
        }

        void writeTo(StreamOutput out) throws IOException {
            for (double d : new double[] {wOpen, wDelivers, wText, wDist, distZero, wEta, etaZero, wRating, priorRating, priorReviews}) {
                out.writeDouble(d);
            }
            out.writeBoolean(hasText);
            out.writeBoolean(hasLoc);
            out.writeDouble(lat);
            out.writeDouble(lon);
        }

        /** The weights' params keys, in the order of the record's components. */
        static final String[] WEIGHTS = {"w_open", "w_delivers", "w_text", "w_dist", "dist_zero", "w_eta", "eta_zero", "w_rating",
            "prior_rating", "prior_reviews"};

        /** Reads the params object; every weight is required, lat and lon with has_loc. */
        static Formula fromMap(Map<String, Object> p) {
            double[] w = new double[WEIGHTS.length];
            for (int i = 0; i < w.length; i++) {
                w[i] = num(p, WEIGHTS[i]);
            }
            boolean hasText = bool(p, "has_text");
            boolean hasLoc = bool(p, "has_loc");
            Formula f = new Formula(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9],
                hasText, hasLoc, hasLoc ? num(p, "lat") : 0, hasLoc ? num(p, "lon") : 0);
            if (!(f.distZero > 0) || !(f.etaZero > 0)) {
                throw new IllegalArgumentException("[" + NAME + "] [dist_zero] and [eta_zero] must be > 0");
            }
            return f;
        }

        private static double num(Map<String, Object> p, String key) {
            Object v = p.get(key);
            if (!(v instanceof Number n) || !Double.isFinite(n.doubleValue())) {
                throw new IllegalArgumentException("[" + NAME + "] params [" + key + "] must be a finite number, got [" + v + "]");
            }
            return n.doubleValue();
        }

        private static boolean bool(Map<String, Object> p, String key) {
            Object v = p.get(key);
            if (!(v instanceof Boolean b)) {
                throw new IllegalArgumentException("[" + NAME + "] params [" + key + "] must be true or false, got [" + v + "]");
            }
            return b;
        }

        void toXContent(XContentBuilder b) throws IOException {
            b.startObject("params");
            b.field("w_open", wOpen).field("w_delivers", wDelivers).field("w_text", wText).field("w_dist", wDist).field("dist_zero", distZero);
            b.field("w_eta", wEta).field("eta_zero", etaZero).field("w_rating", wRating);
            b.field("prior_rating", priorRating).field("prior_reviews", priorReviews);
            b.field("has_text", hasText).field("has_loc", hasLoc);
            if (hasLoc) {
                b.field("lat", lat).field("lon", lon);
            }
            b.endObject();
        }
    }

    public static HotRankSortBuilder fromXContent(XContentParser p, String elementName, HotTables tables) throws IOException {
        if (p.currentToken() != XContentParser.Token.START_OBJECT && p.nextToken() != XContentParser.Token.START_OBJECT) {
            throw new IllegalArgumentException("[" + NAME + "] must be an object");
        }
        String table = null;
        Formula formula = null;
        XContentParser.Token t;
        while ((t = p.nextToken()) == XContentParser.Token.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "table" -> table = p.text();
                case "params" -> formula = Formula.fromMap(p.map());
                default -> throw new IllegalArgumentException("[" + NAME + "] unknown parameter [" + f + "]");
            }
        }
        if (t != XContentParser.Token.END_OBJECT) {
            throw new IllegalArgumentException("[" + NAME + "] malformed");
        }
        if (table == null || table.isEmpty()) {
            throw new IllegalArgumentException("[" + NAME + "] needs [table]");
        }
        if (formula == null) {
            throw new IllegalArgumentException("[" + NAME + "] needs [params]");
        }
        return new HotRankSortBuilder(tables, table, formula);
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder b, Params params) throws IOException {
        b.startObject();
        b.startObject(NAME);
        b.field("table", table);
        formula.toXContent(b);
        b.endObject();
        b.endObject();
        return b;
    }

    @Override
    public HotRankSortBuilder rewrite(QueryRewriteContext ctx) throws IOException {
        tables.concreteIndex(table); // 404 early, wherever the request is rewritten
        return this;
    }

    @Override
    protected SortFieldAndFormat build(QueryShardContext ctx) throws IOException {
        return new SortFieldAndFormat(new SortField(SORT_FIELD_NAME, source(ctx), true), DocValueFormat.RAW);
    }

    @Override
    public BucketedSort buildBucketedSort(QueryShardContext ctx, int bucketSize, BucketedSort.ExtraData extra) {
        throw new IllegalArgumentException("[" + NAME + "] sorts hits only, not aggregation buckets");
    }

    private DoubleValuesComparatorSource source(QueryShardContext ctx) throws IOException {
        ctx.setIsCacheable(false);
        TableRows rows = new TableRows(tables.rows(table, ctx.searcher()));
        IndexGeoPointFieldData points = null;
        IndexNumericFieldData radii = null;
        if (formula.hasLoc()) {
            points = ctx.getForField(mapped(ctx, LOCATION_FIELD));
            radii = ctx.getForField(mapped(ctx, RADIUS_FIELD));
        }
        IndexGeoPointFieldData locations = points;
        IndexNumericFieldData deliveryRadii = radii;
        // The comparator hands each leaf its scorer after asking for the leaf's values; keyed by
        // leaf, as concurrent segment search may sort several leaves at once.
        Map<LeafReaderContext, Scorable[]> scorers = new ConcurrentHashMap<>();
        DoubleValuesComparatorSource src = new DoubleValuesComparatorSource(null, -Double.MAX_VALUE, MultiValueMode.MAX, null) {
            @Override
            protected SortedNumericDoubleValues getValues(LeafReaderContext leaf) throws IOException {
                Scorable[] scorer = scorers.computeIfAbsent(leaf, l -> new Scorable[1]);
                return values(leaf, rows, locations, deliveryRadii, scorer);
            }

            @Override
            protected void setScorer(Scorable scorer, LeafReaderContext leaf) {
                scorers.computeIfAbsent(leaf, l -> new Scorable[1])[0] = scorer;
            }
        };
        src.disableSkipping();
        return src;
    }

    private static MappedFieldType mapped(QueryShardContext ctx, String field) {
        MappedFieldType type = ctx.fieldMapper(field);
        if (type == null) {
            throw new QueryShardException(ctx, "[" + NAME + "] needs the field [" + field + "] mapped in ["
                + ctx.index().getName() + "]");
        }
        return type;
    }

    private SortedNumericDoubleValues values(LeafReaderContext leaf, TableRows rows, IndexGeoPointFieldData locations,
                                             IndexNumericFieldData radii, Scorable[] scorer) throws IOException {
        SortedNumericDocValues ids = DocValues.getSortedNumeric(leaf.reader(), HotFilterQuery.ID_FIELD);
        MultiGeoPointValues points = locations == null ? null : locations.load(leaf).getGeoPointValues();
        SortedNumericDoubleValues radius = radii == null ? null : radii.load(leaf).getDoubleValues();
        HotTable.Row row = new HotTable.Row();
        return FieldData.singleton(new NumericDoubleValues() {
            private double value;

            @Override
            public boolean advanceExact(int doc) throws IOException {
                if (!ids.advanceExact(doc) || !rows.live(ids.nextValue(), row)) {
                    return false;
                }
                double text = 0;
                if (formula.hasText()) {
                    if (scorer[0] == null) {
                        throw new IllegalStateException("[" + NAME + "] has_text needs the query's score: add a _score key to the sort");
                    }
                    text = scorer[0].score();
                }
                double distance = 0;
                boolean delivers = false;
                if (points != null) {
                    if (!points.advanceExact(doc) || points.docValueCount() == 0) {
                        return false;
                    }
                    GeoPoint p = points.nextValue();
                    distance = GeoUtils.arcDistance(p.lat(), p.lon(), formula.lat(), formula.lon());
                    // DeliveryRadiusQuery's test, on the same first values.
                    delivers = radius.advanceExact(doc) && radius.docValueCount() > 0 && distance <= radius.nextValue() * 1000;
                }
                value = formula.score(text, row.open, distance, delivers, row.deliveryMinutes, row.rating, row.reviewCount);
                return true;
            }

            @Override
            public double doubleValue() {
                return value;
            }
        });
    }

    /**
     * The one place this sort reads the hot table: the request's rows ({@link HotRows}, the
     * same row per shop as the request's filter and fetch; 503 when the table is not ready).
     */
    private static final class TableRows {
        private final HotRows rows;

        private TableRows(HotRows rows) {
            this.rows = rows;
        }

        /** Copies the live row of shop {@code id} into {@code row}; false when none or deleted. */
        boolean live(long id, HotTable.Row row) {
            return rows.readLive(id, row);
        }
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (o == null || getClass() != o.getClass()) {
            return false;
        }
        HotRankSortBuilder s = (HotRankSortBuilder) o;
        return table.equals(s.table) && formula.equals(s.formula);
    }

    @Override
    public int hashCode() {
        return Objects.hash(table, formula);
    }
}
