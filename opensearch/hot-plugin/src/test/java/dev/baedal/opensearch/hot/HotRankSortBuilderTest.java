package dev.baedal.opensearch.hot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.opensearch.common.xcontent.json.JsonXContent;
import org.opensearch.core.xcontent.DeprecationHandler;
import org.opensearch.core.xcontent.NamedXContentRegistry;
import org.opensearch.core.xcontent.ToXContent;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.core.xcontent.XContentParser;

/** The baedal_hot_rank sort of docs/hot-layout.md: its formula and its body. */
class HotRankSortBuilderTest {

    static final String PARAMS = """
        {"w_open": 1000, "w_delivers": 2000, "w_text": 0.25, "w_dist": 10, "dist_zero": 5000, "w_eta": 4.5, "eta_zero": 90,
         "w_rating": 5, "prior_rating": 4, "prior_reviews": 50, "has_text": true, "has_loc": true, "lat": 37.5, "lon": 127.0}""";

    static HotRankSortBuilder parse(String json) throws IOException {
        try (XContentParser p = JsonXContent.jsonXContent.createParser(
            NamedXContentRegistry.EMPTY, DeprecationHandler.THROW_UNSUPPORTED_OPERATION, json)) {
            return HotRankSortBuilder.fromXContent(p, HotRankSortBuilder.NAME, null);
        }
    }

    static HotRankSortBuilder.Formula formula() throws IOException {
        return HotRankSortBuilder.Formula.fromMap(
            JsonXContent.jsonXContent.createParser(NamedXContentRegistry.EMPTY, DeprecationHandler.THROW_UNSUPPORTED_OPERATION, PARAMS).map());
    }

    /** The example of Go's rank.TestScoreAddsItsContributions, term by term. */
    @Test
    void scoreAddsTheTerms() throws IOException {
        HotRankSortBuilder.Formula f = formula();
        // 1000 open + 2000 delivers + 0.25*6 text + 10*(1-2500/5000) + 4.5*(1-45/90) + 5*(50*4+50*4.5)/100.
        assertEquals(1000 + 2000 + 1.5 + 5 + 2.25 + 5 * 4.25, f.score(6, true, 2500, true, 45, 4.5, 50));
        // Open but outside its delivery radius: no delivers points.
        assertEquals(1000 + 0.0 + 1.5 + 5 + 2.25 + 5 * 4.25, f.score(6, true, 2500, false, 45, 4.5, 50));
        // Closed, out of radius, beyond both zero points, no reviews: the distance term goes on
        // below 0 (10*(1-7000/5000)), the delivery time's stops at 0, the rating is the prior.
        assertEquals(0.0 + 0.0 + 0.25 * 6 + 10 * (1.0 - 7000.0 / 5000) + 0.0 + 5 * 4.0, f.score(6, false, 7000, false, 120, 5.0, 0));
        // Without a location there is no radius to be within: no delivers points, whatever is passed.
        HotRankSortBuilder.Formula noText = new HotRankSortBuilder.Formula(1000, 2000, 0.25, 10, 5000, 4.5, 90, 5, 4, 50,
            false, false, 0, 0);
        assertEquals(1000 + 2.25 + 5 * 4.25, noText.score(6, true, 2500, true, 45, 4.5, 50));
    }

    @Test
    void bodyRoundTripsAndRefusesMissingParams() throws IOException {
        HotRankSortBuilder b = parse("{\"table\": \"t\", \"params\": " + PARAMS + "}");
        XContentBuilder out = JsonXContent.contentBuilder();
        b.toXContent(out, ToXContent.EMPTY_PARAMS);
        String json = out.toString();
        String inner = json.substring(json.indexOf(':') + 1, json.length() - 1);
        assertEquals(b, parse(inner));
        String missing = assertThrows(IllegalArgumentException.class,
            () -> parse("{\"table\": \"t\", \"params\": {\"w_open\": 1}}")).getMessage();
        assertTrue(missing.contains("[w_delivers]"), missing);
        String noTable = assertThrows(IllegalArgumentException.class, () -> parse("{\"params\": " + PARAMS + "}")).getMessage();
        assertTrue(noTable.contains("[table]"), noTable);
        String zero = assertThrows(IllegalArgumentException.class,
            () -> parse("{\"table\": \"t\", \"params\": " + PARAMS.replace("\"dist_zero\": 5000", "\"dist_zero\": 0") + "}")).getMessage();
        assertTrue(zero.contains("dist_zero"), zero);
    }
}
