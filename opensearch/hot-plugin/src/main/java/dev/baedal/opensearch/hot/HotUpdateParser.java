package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.opensearch.core.xcontent.XContentParser;
import org.opensearch.core.xcontent.XContentParser.Token;

/**
 * Parses the body of {@code POST /_baedal/hot/{table}/_update}:
 * {@code {"shops": [{"id", "version", "deleted"?, "open", "delivery_minutes", "delivery_fee",
 * "rating", "review_count"}, ...]}}.
 *
 * <p>Invariant: it returns only valid entries (id and version present, version >= 0, a live
 * entry carries every hot field) or throws {@link IllegalArgumentException} (HTTP 400) whose
 * message names the offending field, e.g. {@code shops[3].rating}. Unknown fields are errors,
 * so a drift between baedal and the plugin shows at once.
 */
public final class HotUpdateParser {

    /** The field being read, for the message of a syntax error. */
    private String where = "the body";

    private HotUpdateParser() {}

    public static List<HotEntry> parse(XContentParser p) {
        HotUpdateParser h = new HotUpdateParser();
        try {
            return h.parseBody(p);
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            // JsonParseException, XContentParseException and friends: malformed JSON.
            String msg = e.getMessage() == null ? e.toString() : e.getMessage().lines().findFirst().orElse("");
            throw new IllegalArgumentException("malformed update body near [" + h.where + "]: " + msg, e);
        }
    }

    private List<HotEntry> parseBody(XContentParser p) throws IOException {
        if (p.nextToken() != Token.START_OBJECT) {
            throw new IllegalArgumentException("update body must be a JSON object {\"shops\": [...]}");
        }
        List<HotEntry> out = null;
        Token t;
        while ((t = p.nextToken()) == Token.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            if (!name.equals("shops")) {
                throw new IllegalArgumentException("unknown field [" + name + "] in update body (want \"shops\")");
            }
            if (p.currentToken() != Token.START_ARRAY) {
                throw new IllegalArgumentException("[shops] must be an array");
            }
            out = new ArrayList<>();
            int n = 0;
            while (true) {
                where = "shops[" + n + "]";
                if (p.nextToken() == Token.END_ARRAY) {
                    break;
                }
                out.add(parseShop(p, "shops[" + n + "]"));
                n++;
            }
        }
        if (t != Token.END_OBJECT) {
            throw new IllegalArgumentException("malformed update body");
        }
        if (out == null) {
            throw new IllegalArgumentException("update body needs the field [shops]");
        }
        if (p.nextToken() != null) {
            throw new IllegalArgumentException("trailing content after the update body");
        }
        return out;
    }

    private HotEntry parseShop(XContentParser p, String at) throws IOException {
        if (p.currentToken() != Token.START_OBJECT) {
            throw new IllegalArgumentException("[" + at + "] must be an object");
        }
        Long id = null;
        Long version = null;
        Boolean deleted = null;
        Boolean open = null;
        Integer minutes = null;
        Integer fee = null;
        Double rating = null;
        Integer reviews = null;
        while (p.nextToken() == Token.FIELD_NAME) {
            String name = p.currentName();
            where = at + "." + name;
            Token v = p.nextToken();
            String field = at + "." + name;
            where = field;
            switch (name) {
                case "id" -> id = longValue(p, v, field);
                case "version" -> version = longValue(p, v, field);
                case "deleted" -> deleted = boolValue(p, v, field);
                case "open" -> open = boolValue(p, v, field);
                case "delivery_minutes" -> minutes = intValue(p, v, field);
                case "delivery_fee" -> fee = intValue(p, v, field);
                case "rating" -> rating = doubleValue(p, v, field);
                case "review_count" -> reviews = intValue(p, v, field);
                default -> throw new IllegalArgumentException("unknown field [" + field + "]");
            }
        }
        if (id == null) {
            throw new IllegalArgumentException("[" + at + ".id] is required");
        }
        if (id == HotTable.EMPTY) {
            throw new IllegalArgumentException("[" + at + ".id] " + id + " is reserved");
        }
        if (version == null) {
            throw new IllegalArgumentException("[" + at + ".version] is required");
        }
        if (version < 0) {
            throw new IllegalArgumentException("[" + at + ".version] must be >= 0, got " + version);
        }
        if (Boolean.TRUE.equals(deleted)) {
            return HotEntry.tombstone(id, version);
        }
        require(open, at, "open");
        require(minutes, at, "delivery_minutes");
        require(fee, at, "delivery_fee");
        require(rating, at, "rating");
        require(reviews, at, "review_count");
        return new HotEntry(id, version, false, open, minutes, fee, rating, reviews);
    }

    private static void require(Object v, String at, String name) {
        if (v == null) {
            throw new IllegalArgumentException("[" + at + "." + name + "] is required unless \"deleted\": true");
        }
    }

    private static long longValue(XContentParser p, Token t, String field) throws IOException {
        if (t != Token.VALUE_NUMBER) {
            throw new IllegalArgumentException("[" + field + "] must be an integer, got " + t);
        }
        XContentParser.NumberType nt = p.numberType();
        if (nt != XContentParser.NumberType.INT && nt != XContentParser.NumberType.LONG) {
            throw new IllegalArgumentException("[" + field + "] must be an integer, got " + p.text());
        }
        return p.longValue();
    }

    private static int intValue(XContentParser p, Token t, String field) throws IOException {
        long v = longValue(p, t, field);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("[" + field + "] out of range: " + v);
        }
        return (int) v;
    }

    private static double doubleValue(XContentParser p, Token t, String field) throws IOException {
        if (t != Token.VALUE_NUMBER) {
            throw new IllegalArgumentException("[" + field + "] must be a number, got " + t);
        }
        double d = p.doubleValue();
        if (!Double.isFinite(d)) {
            throw new IllegalArgumentException("[" + field + "] must be finite");
        }
        return d;
    }

    private static boolean boolValue(XContentParser p, Token t, String field) throws IOException {
        if (t != Token.VALUE_BOOLEAN) {
            throw new IllegalArgumentException("[" + field + "] must be true or false, got " + t);
        }
        return p.booleanValue();
    }
}
