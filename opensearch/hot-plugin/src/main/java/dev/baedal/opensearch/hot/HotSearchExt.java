package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.Objects;
import org.opensearch.core.common.io.stream.StreamInput;
import org.opensearch.core.common.io.stream.StreamOutput;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.core.xcontent.XContentParser;
import org.opensearch.search.SearchExtBuilder;

/**
 * {@code "ext": {"baedal_hot": {"table": T}}}: asks {@link HotFetchSubPhase} to add the hot
 * fields of table T to every top-level hit. Carries only the table name.
 */
public final class HotSearchExt extends SearchExtBuilder {

    public static final String NAME = "baedal_hot";

    private final String table;

    public HotSearchExt(String table) {
        this.table = Objects.requireNonNull(table);
    }

    public HotSearchExt(StreamInput in) throws IOException {
        table = in.readString();
    }

    public String table() {
        return table;
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        out.writeString(table);
    }

    public static HotSearchExt fromXContent(XContentParser p) throws IOException {
        if (p.currentToken() != XContentParser.Token.START_OBJECT && p.nextToken() != XContentParser.Token.START_OBJECT) {
            throw new IllegalArgumentException("[ext." + NAME + "] must be an object {\"table\": ...}");
        }
        String table = null;
        XContentParser.Token t;
        while ((t = p.nextToken()) == XContentParser.Token.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            if (!f.equals("table")) {
                throw new IllegalArgumentException("[ext." + NAME + "] unknown field [" + f + "]");
            }
            table = p.text();
        }
        if (t != XContentParser.Token.END_OBJECT || table == null || table.isEmpty()) {
            throw new IllegalArgumentException("[ext." + NAME + "] needs [table]");
        }
        return new HotSearchExt(table);
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder b, Params params) throws IOException {
        return b.startObject(NAME).field("table", table).endObject();
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof HotSearchExt e && e.table.equals(table);
    }

    @Override
    public int hashCode() {
        return table.hashCode();
    }
}
