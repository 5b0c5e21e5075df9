package dev.baedal.opensearch.hot;

import java.io.IOException;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.core.common.bytes.BytesReference;
import org.opensearch.core.xcontent.DeprecationHandler;
import org.opensearch.core.xcontent.MediaType;
import org.opensearch.core.xcontent.MediaTypeRegistry;
import org.opensearch.core.xcontent.NamedXContentRegistry;
import org.opensearch.core.xcontent.XContentParser;

/**
 * Reads a table row from the {@code _source} of a shop-head document: {@code id},
 * {@code version}, {@code deleted} and the hot fields, skipping every other field. The
 * indexing-operation listener and the scan of the local shard both read rows this way, so a row
 * and the document it came from always agree.
 *
 * <p>A missing {@code id} falls back to the document's {@code _id}, a missing {@code version}
 * to the operation's version; a missing hot field reads as 0 (false for {@code open}), and
 * {@code deleted: true} makes a tombstone whatever else the document holds.
 */
final class HeadSource {

    private HeadSource() {}

    /** Parses one head document; {@code type} null means detect it from the bytes. */
    static HotEntry parse(BytesReference source, MediaType type, String docId, long fallbackVersion) throws IOException {
        long id = Long.MIN_VALUE;
        long version = -1;
        boolean deleted = false;
        boolean open = false;
        int minutes = 0;
        int fee = 0;
        double rating = 0;
        int reviews = 0;
        MediaType media = type != null ? type : MediaTypeRegistry.xContentType(source);
        try (XContentParser p = XContentHelper.createParser(NamedXContentRegistry.EMPTY,
            DeprecationHandler.THROW_UNSUPPORTED_OPERATION, source, media)) {
            if (p.nextToken() != XContentParser.Token.START_OBJECT) {
                throw new IOException("shop-head document [" + docId + "] is not an object");
            }
            for (XContentParser.Token t = p.nextToken(); t == XContentParser.Token.FIELD_NAME; t = p.nextToken()) {
                String name = p.currentName();
                XContentParser.Token v = p.nextToken();
                if (v == XContentParser.Token.VALUE_NULL) {
                    continue;
                }
                switch (name) {
                    case "id" -> id = p.longValue();
                    case "version" -> version = p.longValue();
                    case "deleted" -> deleted = p.booleanValue();
                    case "open" -> open = p.booleanValue();
                    case "delivery_minutes" -> minutes = p.intValue();
                    case "delivery_fee" -> fee = p.intValue();
                    case "rating" -> rating = p.doubleValue();
                    case "review_count" -> reviews = p.intValue();
                    default -> p.skipChildren();
                }
            }
        }
        if (id == Long.MIN_VALUE) {
            try {
                id = Long.parseLong(docId);
            } catch (NumberFormatException e) {
                throw new IOException("shop-head document [" + docId + "] has no numeric id", e);
            }
        }
        if (version < 0) {
            version = Math.max(fallbackVersion, 0);
        }
        return deleted ? HotEntry.tombstone(id, version) : new HotEntry(id, version, false, open, minutes, fee, rating, reviews);
    }
}
