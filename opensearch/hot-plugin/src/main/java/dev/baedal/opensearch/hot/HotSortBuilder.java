package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.Locale;
import java.util.Objects;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.SortedNumericDocValues;
import org.apache.lucene.search.SortField;
import org.apache.lucene.util.BitSet;
import org.opensearch.common.util.BigArrays;
import org.opensearch.core.common.io.stream.StreamInput;
import org.opensearch.core.common.io.stream.StreamOutput;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.core.xcontent.XContentParser;
import org.opensearch.index.fielddata.FieldData;
import org.opensearch.index.fielddata.IndexFieldData.XFieldComparatorSource.Nested;
import org.opensearch.index.fielddata.NumericDoubleValues;
import org.opensearch.index.fielddata.SortedNumericDoubleValues;
import org.opensearch.index.fielddata.fieldcomparator.DoubleValuesComparatorSource;
import org.opensearch.index.query.QueryRewriteContext;
import org.opensearch.index.query.QueryShardContext;
import org.opensearch.search.DocValueFormat;
import org.opensearch.search.MultiValueMode;
import org.opensearch.search.sort.BucketedSort;
import org.opensearch.search.sort.NestedSortBuilder;
import org.opensearch.search.sort.SortBuilder;
import org.opensearch.search.sort.SortFieldAndFormat;
import org.opensearch.search.sort.SortOrder;

/**
 * {@code {"baedal_hot": {"table": T, "field": delivery_minutes|delivery_fee|rating|eta,
 * "order": asc|desc, "nested"?: {"path": "menus", "filter": Q}}}}: sorts shops by a hot value
 * of table T. {@code eta} = the shop's delivery_minutes + the smallest {@code menus.cook_minutes}
 * among the menus the nested filter matches.
 *
 * <p>Invariants: the SortField is a plain {@link SortField} over a
 * {@link DoubleValuesComparatorSource} (the only shape shard results can be serialised in),
 * named {@code _baedal_hot} (no points field, so Lucene's skipping never applies) with
 * skipping disabled anyway; values in {@code hit.sort} are doubles (DocValueFormat.RAW), so
 * {@code search_after} takes them back as they are. A shop missing from the table (or deleted,
 * or with no matching menu for eta) sorts last, with the value {@code Double.MAX_VALUE}
 * (asc) or {@code -Double.MAX_VALUE} (desc): finite, so it stays valid JSON.
 * Not ready answers 503; the shard request cache is off.
 */
public final class HotSortBuilder extends SortBuilder<HotSortBuilder> {

    public static final String NAME = "baedal_hot";
    static final String SORT_FIELD_NAME = "_baedal_hot";
    static final String COOK_FIELD = "menus.cook_minutes";

    /** The hot value to sort on. */
    public enum Field { DELIVERY_MINUTES, DELIVERY_FEE, RATING, ETA }

    private final HotTables tables;
    private final String table;
    private final Field field;
    private final NestedSortBuilder nested;

    public HotSortBuilder(HotTables tables, String table, Field field, SortOrder order, NestedSortBuilder nested) {
        this.tables = tables;
        this.table = Objects.requireNonNull(table);
        this.field = Objects.requireNonNull(field);
        this.order = Objects.requireNonNull(order);
        this.nested = nested;
        if (field == Field.ETA && (nested == null || nested.getPath() == null)) {
            throw new IllegalArgumentException("[" + NAME + "] field [eta] needs [nested] with [path] and [filter]");
        }
        if (field != Field.ETA && nested != null) {
            throw new IllegalArgumentException("[" + NAME + "] [nested] is only for field [eta]");
        }
    }

    public HotSortBuilder(StreamInput in, HotTables tables) throws IOException {
        this.tables = tables;
        table = in.readString();
        field = in.readEnum(Field.class);
        order = SortOrder.readFromStream(in);
        nested = in.readOptionalWriteable(NestedSortBuilder::new);
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        out.writeString(table);
        out.writeEnum(field);
        order.writeTo(out);
        out.writeOptionalWriteable(nested);
    }

    public static HotSortBuilder fromXContent(XContentParser p, String elementName, HotTables tables) throws IOException {
        if (p.currentToken() != XContentParser.Token.START_OBJECT && p.nextToken() != XContentParser.Token.START_OBJECT) {
            throw new IllegalArgumentException("[" + NAME + "] must be an object");
        }
        String table = null;
        Field field = null;
        SortOrder order = SortOrder.ASC;
        NestedSortBuilder nested = null;
        XContentParser.Token t;
        while ((t = p.nextToken()) == XContentParser.Token.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "table" -> table = p.text();
                case "field" -> {
                    try {
                        field = Field.valueOf(p.text().toUpperCase(Locale.ROOT));
                    } catch (IllegalArgumentException e) {
                        throw new IllegalArgumentException("[" + NAME + "] unknown field [" + p.text()
                            + "], want delivery_minutes, delivery_fee, rating or eta");
                    }
                }
                case "order" -> order = SortOrder.fromString(p.text());
                case "nested" -> nested = NestedSortBuilder.fromXContent(p);
                default -> throw new IllegalArgumentException("[" + NAME + "] unknown parameter [" + f + "]");
            }
        }
        if (t != XContentParser.Token.END_OBJECT) {
            throw new IllegalArgumentException("[" + NAME + "] malformed");
        }
        if (table == null || table.isEmpty()) {
            throw new IllegalArgumentException("[" + NAME + "] needs [table]");
        }
        if (field == null) {
            throw new IllegalArgumentException("[" + NAME + "] needs [field]");
        }
        return new HotSortBuilder(tables, table, field, order, nested);
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder b, Params params) throws IOException {
        b.startObject();
        b.startObject(NAME);
        b.field("table", table);
        b.field("field", field.name().toLowerCase(Locale.ROOT));
        b.field("order", order);
        if (nested != null) {
            b.field("nested", nested);
        }
        b.endObject();
        b.endObject();
        return b;
    }

    @Override
    public HotSortBuilder rewrite(QueryRewriteContext ctx) throws IOException {
        tables.concreteIndex(table); // 404 early, wherever the request is rewritten
        if (nested == null) {
            return this;
        }
        NestedSortBuilder rewritten = nested.rewrite(ctx);
        return rewritten == nested ? this : new HotSortBuilder(tables, table, field, order, rewritten);
    }

    @Override
    protected SortFieldAndFormat build(QueryShardContext ctx) throws IOException {
        DoubleValuesComparatorSource src = source(ctx);
        return new SortFieldAndFormat(new SortField(SORT_FIELD_NAME, src, order == SortOrder.DESC), DocValueFormat.RAW);
    }

    @Override
    public BucketedSort buildBucketedSort(QueryShardContext ctx, int bucketSize, BucketedSort.ExtraData extra) throws IOException {
        BigArrays bigArrays = ctx.bigArrays();
        return source(ctx).newBucketedSort(bigArrays, order, DocValueFormat.RAW, bucketSize, extra);
    }

    private DoubleValuesComparatorSource source(QueryShardContext ctx) throws IOException {
        ctx.setIsCacheable(false);
        HotRows t = tables.rows(table, ctx.searcher());
        Nested n = field == Field.ETA ? resolveNested(ctx, nested) : null;
        double missing = order == SortOrder.DESC ? -Double.MAX_VALUE : Double.MAX_VALUE;
        DoubleValuesComparatorSource src = new DoubleValuesComparatorSource(null, missing, MultiValueMode.MIN, n) {
            @Override
            protected SortedNumericDoubleValues getValues(LeafReaderContext leaf) throws IOException {
                return field == Field.ETA ? etaValues(leaf, t, n.rootDocs(leaf)) : shopValues(leaf, t);
            }
        };
        src.disableSkipping();
        return src;
    }

    private SortedNumericDoubleValues shopValues(LeafReaderContext leaf, HotRows t) throws IOException {
        SortedNumericDocValues ids = DocValues.getSortedNumeric(leaf.reader(), HotFilterQuery.ID_FIELD);
        HotTable.Row row = new HotTable.Row();
        return FieldData.singleton(new NumericDoubleValues() {
            private double value;

            @Override
            public boolean advanceExact(int doc) throws IOException {
                if (!ids.advanceExact(doc) || !t.readLive(ids.nextValue(), row)) {
                    return false;
                }
                value = switch (field) {
                    case DELIVERY_MINUTES -> row.deliveryMinutes;
                    case DELIVERY_FEE -> row.deliveryFee;
                    case RATING -> row.rating;
                    case ETA -> throw new AssertionError();
                };
                return true;
            }

            @Override
            public double doubleValue() {
                return value;
            }
        });
    }

    /** Per child (menu) doc: its shop's delivery_minutes + its smallest cook_minutes. */
    private static SortedNumericDoubleValues etaValues(LeafReaderContext leaf, HotRows t, BitSet roots) throws IOException {
        SortedNumericDocValues cook = DocValues.getSortedNumeric(leaf.reader(), COOK_FIELD);
        HotFilterQuery.ParentShop shop = roots == null ? null : new HotFilterQuery.ParentShop(leaf, roots, t);
        return FieldData.singleton(new NumericDoubleValues() {
            private double value;

            @Override
            public boolean advanceExact(int childDoc) throws IOException {
                if (shop == null || !cook.advanceExact(childDoc)) {
                    return false;
                }
                HotTable.Row r = shop.row(childDoc);
                if (r == null) {
                    return false;
                }
                long min = Long.MAX_VALUE;
                for (int i = 0; i < cook.docValueCount(); i++) {
                    min = Math.min(min, cook.nextValue());
                }
                value = (double) r.deliveryMinutes + min;
                return true;
            }

            @Override
            public double doubleValue() {
                return value;
            }
        });
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
        HotSortBuilder s = (HotSortBuilder) o;
        return table.equals(s.table) && field == s.field && order == s.order && Objects.equals(nested, s.nested);
    }

    @Override
    public int hashCode() {
        return Objects.hash(table, field, order, nested);
    }
}
