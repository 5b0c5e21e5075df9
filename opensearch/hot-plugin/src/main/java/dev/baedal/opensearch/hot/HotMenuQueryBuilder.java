package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.Objects;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.join.BitSetProducer;
import org.opensearch.common.lucene.search.Queries;
import org.opensearch.core.common.io.stream.StreamInput;
import org.opensearch.core.common.io.stream.StreamOutput;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.core.xcontent.XContentParser;
import org.opensearch.index.query.AbstractQueryBuilder;
import org.opensearch.index.query.QueryBuilder;
import org.opensearch.index.query.QueryRewriteContext;
import org.opensearch.index.query.QueryShardContext;

/**
 * {@code {"baedal_hot_menu": {"table": T, "max_total_fee": int}}}, used inside {@code nested} on
 * {@code menus} (or as the {@code nested.filter} of the {@code baedal_hot} eta sort): matches a
 * menu whose shop's {@code delivery_fee} + its {@code menus.extra_fee} <= max_total_fee. The
 * shop is the menu's parent: the next root document of the block, whose {@code id} names it.
 *
 * <p>Invariants: as {@link HotShopQueryBuilder} (503 when not ready, shard request cache off).
 * Inside {@code nested} the parent filter comes from {@link QueryShardContext#getParentFilter()};
 * elsewhere (a sort's nested filter) it is the non-nested-docs filter, i.e. one level of nesting.
 */
public final class HotMenuQueryBuilder extends AbstractQueryBuilder<HotMenuQueryBuilder> {

    public static final String NAME = "baedal_hot_menu";

    private final HotTables tables;
    private final String table;
    private final int maxTotalFee;

    public HotMenuQueryBuilder(HotTables tables, String table, int maxTotalFee) {
        this.tables = tables;
        this.table = Objects.requireNonNull(table, "[" + NAME + "] needs [table]");
        this.maxTotalFee = maxTotalFee;
    }

    public HotMenuQueryBuilder(StreamInput in, HotTables tables) throws IOException {
        super(in);
        this.tables = tables;
        table = in.readString();
        maxTotalFee = in.readInt();
    }

    @Override
    protected void doWriteTo(StreamOutput out) throws IOException {
        out.writeString(table);
        out.writeInt(maxTotalFee);
    }

    public static HotMenuQueryBuilder fromXContent(XContentParser p, HotTables tables) throws IOException {
        String table = null;
        Integer maxTotal = null;
        float boost = DEFAULT_BOOST;
        String queryName = null;
        XContentParser.Token t;
        while ((t = p.nextToken()) == XContentParser.Token.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "table" -> table = p.text();
                case "max_total_fee" -> maxTotal = p.intValue(false);
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
        if (maxTotal == null) {
            throw new IllegalArgumentException("[" + NAME + "] needs [max_total_fee]");
        }
        HotMenuQueryBuilder b = new HotMenuQueryBuilder(tables, table, maxTotal);
        b.boost(boost);
        b.queryName(queryName);
        return b;
    }

    @Override
    protected void doXContent(XContentBuilder b, Params params) throws IOException {
        b.startObject(NAME);
        b.field("table", table);
        b.field("max_total_fee", maxTotalFee);
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
        HotRows rows = tables.rows(table, ctx.searcher());
        BitSetProducer parents = ctx.getParentFilter();
        if (parents == null) {
            parents = ctx.bitsetFilter(Queries.newNonNestedFilter());
        }
        return HotFilterQuery.menu(rows, maxTotalFee, parents);
    }

    @Override
    protected boolean doEquals(HotMenuQueryBuilder o) {
        return table.equals(o.table) && maxTotalFee == o.maxTotalFee;
    }

    @Override
    protected int doHashCode() {
        return Objects.hash(table, maxTotalFee);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }
}
