package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.Objects;
import org.apache.lucene.search.Query;
import org.opensearch.core.common.io.stream.StreamInput;
import org.opensearch.core.common.io.stream.StreamOutput;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.core.xcontent.XContentParser;
import org.opensearch.index.query.AbstractQueryBuilder;
import org.opensearch.index.query.QueryBuilder;
import org.opensearch.index.query.QueryRewriteContext;
import org.opensearch.index.query.QueryShardContext;

/**
 * {@code {"baedal_hot_shop": {"table": T, "open"?: bool, "max_delivery_fee"?: int, "min_rating"?: number}}}:
 * a root-level filter matching the documents whose {@code id} is a live entry of table T that
 * meets every given condition.
 *
 * <p>Invariants: fails with 503 wherever the table is not ready on the node (the coordinator's
 * rewrite and each shard's toQuery); turns the shard request cache off for the request.
 */
public final class HotShopQueryBuilder extends AbstractQueryBuilder<HotShopQueryBuilder> {

    public static final String NAME = "baedal_hot_shop";

    private final HotTables tables;
    private final String table;
    private final Boolean open;
    private final Integer maxDeliveryFee;
    private final Double minRating;

    public HotShopQueryBuilder(HotTables tables, String table, Boolean open, Integer maxDeliveryFee, Double minRating) {
        this.tables = tables;
        this.table = Objects.requireNonNull(table, "[" + NAME + "] needs [table]");
        this.open = open;
        this.maxDeliveryFee = maxDeliveryFee;
        this.minRating = minRating;
    }

    public HotShopQueryBuilder(StreamInput in, HotTables tables) throws IOException {
        super(in);
        this.tables = tables;
        table = in.readString();
        open = in.readOptionalBoolean();
        maxDeliveryFee = in.readOptionalInt();
        minRating = in.readOptionalDouble();
    }

    @Override
    protected void doWriteTo(StreamOutput out) throws IOException {
        out.writeString(table);
        out.writeOptionalBoolean(open);
        out.writeOptionalInt(maxDeliveryFee);
        out.writeOptionalDouble(minRating);
    }

    public static HotShopQueryBuilder fromXContent(XContentParser p, HotTables tables) throws IOException {
        String table = null;
        Boolean open = null;
        Integer maxFee = null;
        Double minRating = null;
        float boost = DEFAULT_BOOST;
        String queryName = null;
        XContentParser.Token t;
        while ((t = p.nextToken()) == XContentParser.Token.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "table" -> table = p.text();
                case "open" -> open = p.booleanValue();
                case "max_delivery_fee" -> maxFee = p.intValue(false);
                case "min_rating" -> minRating = p.doubleValue(false);
                case "boost" -> boost = p.floatValue();
                case "_name" -> queryName = p.text();
                default -> throw new IllegalArgumentException("[" + NAME + "] unknown field [" + f + "]");
            }
        }
        if (t != XContentParser.Token.END_OBJECT) {
            throw new IllegalArgumentException("[" + NAME + "] malformed: expected an object of fields");
        }
        if (table == null || table.isEmpty()) {
            throw new IllegalArgumentException("[" + NAME + "] needs [table]");
        }
        HotShopQueryBuilder b = new HotShopQueryBuilder(tables, table, open, maxFee, minRating);
        b.boost(boost);
        b.queryName(queryName);
        return b;
    }

    @Override
    protected void doXContent(XContentBuilder b, Params params) throws IOException {
        b.startObject(NAME);
        b.field("table", table);
        if (open != null) {
            b.field("open", open);
        }
        if (maxDeliveryFee != null) {
            b.field("max_delivery_fee", maxDeliveryFee);
        }
        if (minRating != null) {
            b.field("min_rating", minRating);
        }
        printBoostAndQueryName(b);
        b.endObject();
    }

    @Override
    protected QueryBuilder doRewrite(QueryRewriteContext ctx) throws IOException {
        if (ctx.convertToShardContext() != null) {
            tables.readyTable(table); // 503 on a shard whose node cannot serve the table (doToQuery's errors answer 400)
        } else {
            tables.concreteIndex(table); // 404 early, on the coordinator
        }
        return this;
    }

    @Override
    protected Query doToQuery(QueryShardContext ctx) throws IOException {
        ctx.setIsCacheable(false);
        return HotFilterQuery.shop(tables.rows(table, ctx.searcher()), open, maxDeliveryFee, minRating);
    }

    @Override
    protected boolean doEquals(HotShopQueryBuilder o) {
        return table.equals(o.table) && Objects.equals(open, o.open)
            && Objects.equals(maxDeliveryFee, o.maxDeliveryFee) && Objects.equals(minRating, o.minRating);
    }

    @Override
    protected int doHashCode() {
        return Objects.hash(table, open, maxDeliveryFee, minRating);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

}
