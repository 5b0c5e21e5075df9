package dev.baedal.opensearch.hot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.opensearch.common.xcontent.json.JsonXContent;
import org.opensearch.core.xcontent.DeprecationHandler;
import org.opensearch.core.xcontent.NamedXContentRegistry;
import org.opensearch.core.xcontent.XContentParser;

/** The update body of docs/hot-layout.md, and 400s that name the field. */
class HotUpdateParserTest {

    static List<HotEntry> parse(String json) throws IOException {
        try (XContentParser p = JsonXContent.jsonXContent.createParser(
            NamedXContentRegistry.EMPTY, DeprecationHandler.THROW_UNSUPPORTED_OPERATION, json)) {
            return HotUpdateParser.parse(p);
        }
    }

    static String error(String json) {
        return assertThrows(IllegalArgumentException.class, () -> parse(json)).getMessage();
    }

    @Test
    void contractExample() throws IOException {
        List<HotEntry> es = parse("""
            {"shops": [
              {"id": 1, "version": 7, "open": true, "delivery_minutes": 30, "delivery_fee": 2000, "rating": 4.5, "review_count": 120},
              {"id": 5, "version": 9, "deleted": true}
            ]}""");
        assertEquals(List.of(new HotEntry(1, 7, false, true, 30, 2000, 4.5, 120), HotEntry.tombstone(5, 9)), es);
        assertEquals(List.of(), parse("{\"shops\": []}"));
        assertEquals(List.of(new HotEntry(2, 1, false, false, 1, 2, 4, 3)), parse(
            "{\"shops\":[{\"id\":2,\"version\":1,\"deleted\":false,\"open\":false,\"delivery_minutes\":1,\"delivery_fee\":2,\"rating\":4,\"review_count\":3}]}"));
    }

    @Test
    void errorsNameTheField() {
        assertTrue(error("{\"shops\":[{\"id\":1,\"version\":2,\"open\":true,\"delivery_minutes\":1,\"delivery_fee\":2,\"review_count\":3}]}")
            .contains("shops[0].rating"));
        assertTrue(error("{\"shops\":[{\"id\":1,\"deleted\":true}]}").contains("shops[0].version"));
        assertTrue(error("{\"shops\":[{\"version\":1,\"deleted\":true}]}").contains("shops[0].id"));
        assertTrue(error("{\"shops\":[{\"id\":1,\"version\":1,\"deleted\":true},{\"id\":\"x\",\"version\":1}]}").contains("shops[1].id"));
        assertTrue(error("{\"shops\":[{\"id\":1.5,\"version\":1,\"deleted\":true}]}").contains("shops[0].id"));
        assertTrue(error("{\"shops\":[{\"id\":1,\"version\":-1,\"deleted\":true}]}").contains("shops[0].version"));
        assertTrue(error("{\"shops\":[{\"id\":1,\"version\":1,\"deleted\":true,\"name\":\"x\"}]}").contains("shops[0].name"));
        assertTrue(error("{\"shops\":[{\"id\":1,\"version\":1,\"open\":\"yes\"}]}").contains("shops[0].open"));
        assertTrue(error("{\"shop\":[]}").contains("shop"));
        assertTrue(error("{}").contains("shops"));
        assertTrue(error("{\"shops\":{}}").contains("shops"));
        assertTrue(error("[]").contains("object"));
        assertTrue(error("{\"shops\":[{\"id\":1,").contains("malformed update body near [shops[0]"));
        String m = error("{\"shops\":[{\"id\":1,\"version\":}]}");
        assertTrue(m.contains("near [shops[0]"), m);
    }
}
