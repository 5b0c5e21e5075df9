package dev.baedal.opensearch.hot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The contract end to end on a real two-node cluster: the shop-head index with the table setting
 * behind an alias, fully replicated, whose writes feed each node's table; a menus index with
 * nested menus (two shards, so the nodes exchange shard results); the shop and menu filters, the
 * sorts (eta with a nested filter and search_after), fetched hot fields, the status check, a
 * table that disagrees with its copy, a joining node, REST errors and the not-ready 503.
 *
 * <p>Shops (head documents): 1 open 30min fee 2000 4.5; 2 open 20min fee 3000 4.8;
 * 3 closed 10min fee 0 3.9 (version 3); 4 open 40min fee 1000 4.1; 5 a tombstone; 6 none.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HotPluginIT {

    static TwoNodeCluster c;

    @BeforeAll
    static void start() throws Exception {
        Path home = Files.createTempDirectory("baedal-hot-it");
        c = new TwoNodeCluster(home);
        TwoNodeCluster.Resp r = c.send(0, "PUT", "/shops_v1", """
            {"settings": {"number_of_shards": 1, "auto_expand_replicas": "0-all", "index.baedal_hot.table": true},
             "aliases": {"shops": {"is_write_index": true}},
             "mappings": {"properties": {"id": {"type": "long"}, "version": {"type": "long"}, "deleted": {"type": "boolean"},
               "open": {"type": "boolean"}, "delivery_minutes": {"type": "integer"},
               "delivery_fee": {"type": "integer"}, "rating": {"type": "double"}, "review_count": {"type": "integer"}}}}""");
        assertEquals(200, r.status(), r.raw());
        r = c.send(0, "PUT", "/menus", """
            {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
             "mappings": {"properties": {"id": {"type": "long"}, "version": {"type": "long"},
               "menus": {"type": "nested", "properties": {"name": {"type": "keyword"},
                 "extra_fee": {"type": "integer"}, "cook_minutes": {"type": "integer"}}}}}}""");
        assertEquals(200, r.status(), r.raw());
        // The head documents, written as baedal writes them (external versions): shops 1..4 at
        // version 2 (shop 3 is closed), then shop 3 at version 3, a stale shop 1, a tombstone.
        StringBuilder bulk = new StringBuilder();
        bulk.append(doc("shops_v1", 1, "\"version\":2,\"open\":true,\"delivery_minutes\":30,\"delivery_fee\":2000,\"rating\":4.5,\"review_count\":120"));
        bulk.append(doc("shops_v1", 2, "\"version\":2,\"open\":true,\"delivery_minutes\":20,\"delivery_fee\":3000,\"rating\":4.8,\"review_count\":80"));
        bulk.append(doc("shops_v1", 3, "\"version\":2,\"open\":false,\"delivery_minutes\":10,\"delivery_fee\":0,\"rating\":3.9,\"review_count\":5"));
        bulk.append(doc("shops_v1", 4, "\"version\":2,\"open\":true,\"delivery_minutes\":40,\"delivery_fee\":1000,\"rating\":4.1,\"review_count\":9"));
        bulk.append(doc("menus", 1, "\"version\":2,\"menus\":[{\"name\":\"a\",\"extra_fee\":0,\"cook_minutes\":10},{\"name\":\"b\",\"extra_fee\":1500,\"cook_minutes\":5}]"));
        bulk.append(doc("menus", 2, "\"version\":2,\"menus\":[{\"name\":\"c\",\"extra_fee\":0,\"cook_minutes\":15}]"));
        bulk.append(doc("menus", 3, "\"version\":2,\"menus\":[{\"name\":\"d\",\"extra_fee\":500,\"cook_minutes\":20}]"));
        bulk.append(doc("menus", 4, "\"version\":2,\"menus\":[{\"name\":\"e\",\"extra_fee\":2500,\"cook_minutes\":1}]"));
        bulk.append(doc("menus", 5, "\"version\":9,\"menus\":[{\"name\":\"f\",\"extra_fee\":0,\"cook_minutes\":1}]"));
        bulk.append(doc("menus", 6, "\"version\":1,\"menus\":[{\"name\":\"g\",\"extra_fee\":0,\"cook_minutes\":1}]"));
        r = c.send(1, "POST", "/_bulk?refresh=true", bulk.toString());
        assertEquals(200, r.status(), r.raw());
        assertEquals(false, r.body().get("errors"), r.raw());
        TwoNodeCluster.waitFor(() -> "green".equals(c.get(0, "/_cluster/health/shops_v1").body().get("status")), "shops_v1 green");
        r = c.send(0, "POST", "/_bulk", versioned("shops_v1", 3, 3, "\"version\":3,\"open\":false,\"delivery_minutes\":10,"
            + "\"delivery_fee\":0,\"rating\":3.9,\"review_count\":6")
            + versioned("shops_v1", 1, 1, "\"version\":1,\"open\":false,\"delivery_minutes\":99,\"delivery_fee\":1,\"rating\":1,\"review_count\":1")
            + versioned("shops_v1", 5, 9, "\"version\":9,\"deleted\":true"));
        assertEquals(200, r.status(), r.raw());
        List<Object> items = list(r.body().get("items"));
        assertEquals(409, map(map(items.get(1)).get("index")).get("status"), "a stale head is refused: " + r.raw());
        // The two menus shards sit on different nodes, so shard results (sort values) cross the transport.
        TwoNodeCluster.waitFor(() -> {
            String shards = c.get(0, "/_cat/shards/menus?h=node").raw();
            return shards.contains("a") && shards.contains("b");
        }, "menus shards on both nodes");
    }

    static String versioned(String index, long id, long version, String fields) {
        return "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"" + id + "\",\"version\":" + version
            + ",\"version_type\":\"external\"}}\n{\"id\":" + id + "," + fields + "}\n";
    }

    static String doc(String index, long id, String fields) {
        return "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"" + id + "\"}}\n{\"id\":" + id + "," + fields + "}\n";
    }

    @AfterAll
    static void stop() throws Exception {
        if (c != null) {
            c.close();
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    static List<Map<String, Object>> hits(TwoNodeCluster.Resp r) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Object h : list(map(r.body().get("hits")).get("hits"))) {
            out.add(map(h));
        }
        return out;
    }

    static List<String> ids(TwoNodeCluster.Resp r) {
        return hits(r).stream().map(h -> (String) h.get("_id")).toList();
    }

    TwoNodeCluster.Resp search(int node, String body) throws Exception {
        TwoNodeCluster.Resp r = c.send(node, "POST", "/menus/_search", body);
        assertEquals(200, r.status(), r.raw());
        assertEquals(0, map(r.body().get("_shards")).get("failed"), r.raw());
        return r;
    }

    @Test
    @Order(1)
    void everyNodesTableHoldsItsCopysRows() throws Exception {
        TwoNodeCluster.waitFor(() -> Boolean.TRUE.equals(c.get(1, "/_baedal/hot/shops/_status").body().get("ready")), "ready");
        TwoNodeCluster.Resp r = c.get(1, "/_baedal/hot/shops/_status");
        assertEquals("shops_v1", r.body().get("table"));
        assertEquals(true, r.body().get("agrees"), r.raw());
        Map<String, Object> nodes = map(r.body().get("nodes"));
        assertEquals(2, nodes.size(), r.raw());
        Object digest = null;
        for (Object n : nodes.values()) {
            assertEquals(true, map(n).get("has_copy"), r.raw());
            assertEquals(4, map(n).get("shops"), r.raw());
            assertEquals(1, map(n).get("tombstones"), r.raw());
            assertEquals(5, map(n).get("shard_documents"), r.raw());
            assertEquals(0, map(n).get("disagreeing"), r.raw());
            assertEquals(map(n).get("shard_digest"), map(n).get("digest"), r.raw());
            assertTrue(((Number) map(n).get("bytes")).longValue() > 0, r.raw());
            if (digest != null) {
                assertEquals(digest, map(n).get("digest"), "both nodes hold the same rows: " + r.raw());
            }
            digest = map(n).get("digest");
        }
        // The digest of the four live rows, computed here from the formula, not by the plugin.
        long sum = HotTable.rowDigest(1, 2, true, 30, 2000, 4.5, 120) + HotTable.rowDigest(2, 2, true, 20, 3000, 4.8, 80)
            + HotTable.rowDigest(3, 3, false, 10, 0, 3.9, 6) + HotTable.rowDigest(4, 2, true, 40, 1000, 4.1, 9);
        assertEquals(String.format(java.util.Locale.ROOT, "%016x", sum), digest, r.raw());
    }

    @Test
    @Order(3)
    void shopFilter() throws Exception {
        for (int node = 0; node < 2; node++) {
            assertEquals(List.of("1", "2", "4"), ids(search(node,
                "{\"query\":{\"baedal_hot_shop\":{\"table\":\"shops\",\"open\":true}},\"sort\":[{\"id\":\"asc\"}]}")));
            assertEquals(List.of("1", "4"), ids(search(node,
                "{\"query\":{\"baedal_hot_shop\":{\"table\":\"shops\",\"open\":true,\"max_delivery_fee\":2000}},\"sort\":[{\"id\":\"asc\"}]}")));
            assertEquals(List.of("1", "2"), ids(search(node,
                "{\"query\":{\"baedal_hot_shop\":{\"table\":\"shops\",\"min_rating\":4.2}},\"sort\":[{\"id\":\"asc\"}]}")));
            assertEquals(List.of("1", "2", "3", "4"), ids(search(node,
                "{\"query\":{\"baedal_hot_shop\":{\"table\":\"shops\"}},\"sort\":[{\"id\":\"asc\"}]}")));
        }
    }

    static final String MENU_FILTER = "{\"baedal_hot_menu\":{\"table\":\"shops\",\"max_total_fee\":3000}}";

    @Test
    @Order(4)
    void menuFilterInsideNested() throws Exception {
        TwoNodeCluster.Resp r = search(0, "{\"query\":{\"nested\":{\"path\":\"menus\",\"query\":" + MENU_FILTER
            + ",\"inner_hits\":{}}},\"sort\":[{\"id\":\"asc\"}],\"ext\":{\"baedal_hot\":{\"table\":\"shops\"}}}");
        assertEquals(List.of("1", "2", "3"), ids(r));
        // shop 1: only menu a (2000+0); menu b is 2000+1500 > 3000
        Map<String, Object> inner = map(map(map(hits(r).get(0).get("inner_hits")).get("menus")).get("hits"));
        assertEquals(1, list(inner.get("hits")).size(), r.raw());
        Map<String, Object> menuHit = map(list(inner.get("hits")).get(0));
        assertNull(menuHit.get("fields"), "nested hits get no baedal_hot field: " + r.raw());
    }

    @Test
    @Order(5)
    void sortByHotFieldMissingLast() throws Exception {
        TwoNodeCluster.Resp r = search(1, "{\"sort\":[{\"baedal_hot\":{\"table\":\"shops\",\"field\":\"delivery_minutes\",\"order\":\"asc\"}},"
            + "{\"id\":\"asc\"}]}");
        assertEquals(List.of("3", "2", "1", "4", "5", "6"), ids(r));
        assertEquals(List.of(10.0, 3), hits(r).get(0).get("sort"));
        assertEquals(List.of(Double.MAX_VALUE, 5), hits(r).get(4).get("sort"));
        r = search(0, "{\"sort\":[{\"baedal_hot\":{\"table\":\"shops\",\"field\":\"rating\",\"order\":\"desc\"}},{\"id\":\"asc\"}]}");
        assertEquals(List.of("2", "1", "4", "3", "5", "6"), ids(r));
        assertEquals(-Double.MAX_VALUE, ((Number) list(hits(r).get(5).get("sort")).get(0)).doubleValue());
        r = search(0, "{\"sort\":[{\"baedal_hot\":{\"table\":\"shops\",\"field\":\"delivery_fee\",\"order\":\"desc\"}},{\"id\":\"asc\"}]}");
        assertEquals(List.of("2", "1", "4", "3", "5", "6"), ids(r));
    }

    @Test
    @Order(6)
    void etaSortWithNestedFilterAndSearchAfter() throws Exception {
        String sort = "\"sort\":[{\"baedal_hot\":{\"table\":\"shops\",\"field\":\"eta\",\"order\":\"asc\","
            + "\"nested\":{\"path\":\"menus\",\"filter\":" + MENU_FILTER + "}}},{\"id\":\"asc\"}]";
        // eta: 3 = 10+20, 2 = 20+15, 1 = 30+10 (menu b does not match), 4 none, 5 deleted, 6 missing
        TwoNodeCluster.Resp r = search(0, "{" + sort + "}");
        assertEquals(List.of("3", "2", "1", "4", "5", "6"), ids(r));
        assertEquals(List.of(30.0, 3), hits(r).get(0).get("sort"));
        assertEquals(List.of(40.0, 1), hits(r).get(2).get("sort"));
        r = search(1, "{\"size\":2," + sort + ",\"search_after\":[35.0,2]}");
        assertEquals(List.of("1", "4"), ids(r));
        Object last = list(hits(r).get(1).get("sort")).get(0);
        r = search(1, "{\"size\":2," + sort + ",\"search_after\":[" + last + ",4]}");
        assertEquals(List.of("5", "6"), ids(r));
        // the filter and the sort together, as baedal sends them
        r = search(1, "{\"query\":{\"bool\":{\"filter\":[{\"baedal_hot_shop\":{\"table\":\"shops\",\"open\":true}},"
            + "{\"nested\":{\"path\":\"menus\",\"query\":" + MENU_FILTER + "}}]}}," + sort + "}");
        assertEquals(List.of("2", "1"), ids(r));
    }

    @Test
    @Order(7)
    void fetchedHotFields() throws Exception {
        TwoNodeCluster.Resp r = search(1, "{\"sort\":[{\"id\":\"asc\"}],\"ext\":{\"baedal_hot\":{\"table\":\"shops\"}}}");
        List<Map<String, Object>> hs = hits(r);
        assertEquals(Map.of("baedal_hot", List.of(Map.of("version", 2, "open", true, "delivery_minutes", 30,
            "delivery_fee", 2000, "rating", 4.5, "review_count", 120))), hs.get(0).get("fields"), r.raw());
        assertEquals(6, map(list(map(hs.get(2).get("fields")).get("baedal_hot")).get(0)).get("review_count"));
        assertNull(hs.get(4).get("fields"), "deleted shop 5");
        assertNull(hs.get(5).get("fields"), "shop 6 not in the table");
    }

    @Test
    @Order(8)
    void restErrors() throws Exception {
        TwoNodeCluster.Resp r = c.get(0, "/_baedal/hot/nope/_status");
        assertEquals(404, r.status(), r.raw());
        r = c.get(0, "/_baedal/hot/menus/_status");
        assertEquals(404, r.status(), r.raw());
        r = c.send(0, "POST", "/menus/_search", "{\"query\":{\"baedal_hot_shop\":{\"table\":\"nope\"}}}");
        assertEquals(404, r.status(), r.raw());
        r = c.send(0, "POST", "/menus/_search", "{\"sort\":[{\"baedal_hot\":{\"table\":\"shops\",\"field\":\"eta\"}}]}");
        assertEquals(400, r.status(), r.raw());
    }

    @Test
    @Order(9)
    void purgingATombstoneRemovesItsRowEverywhere() throws Exception {
        TwoNodeCluster.Resp r = c.send(1, "DELETE", "/shops_v1/_doc/5", null);
        assertEquals(200, r.status(), r.raw());
        r = c.get(0, "/_baedal/hot/shops/_status");
        for (Object n : map(r.body().get("nodes")).values()) {
            assertEquals(0, map(n).get("tombstones"), r.raw());
            assertEquals(4, map(n).get("shops"), r.raw());
        }
        assertEquals(true, r.body().get("agrees"), r.raw());
    }

    @Test
    @Order(10)
    void sameAnswersWithConcurrentSegmentSearch() throws Exception {
        // More segments in menus (one refresh each), then every search sliced across threads.
        for (int id = 7; id <= 9; id++) {
            TwoNodeCluster.Resp r = c.send(0, "PUT", "/menus/_doc/" + id + "?refresh=true",
                "{\"id\":" + id + ",\"menus\":[{\"name\":\"x\",\"extra_fee\":0,\"cook_minutes\":1}]}");
            assertEquals(201, r.status(), r.raw());
        }
        TwoNodeCluster.Resp r = c.send(0, "PUT", "/_cluster/settings",
            "{\"persistent\":{\"search.concurrent_segment_search.mode\":\"all\"}}");
        assertEquals(200, r.status(), r.raw());
        try {
            shopFilter();
            TwoNodeCluster.Resp s = search(1, "{\"sort\":[{\"baedal_hot\":{\"table\":\"shops\",\"field\":\"eta\",\"order\":\"asc\","
                + "\"nested\":{\"path\":\"menus\",\"filter\":" + MENU_FILTER + "}}},{\"id\":\"asc\"}]}");
            assertEquals(List.of("3", "2", "1", "4", "5", "6", "7", "8", "9"), ids(s));
            s = search(0, "{\"query\":{\"nested\":{\"path\":\"menus\",\"query\":" + MENU_FILTER + "}},\"sort\":[{\"id\":\"asc\"}]}");
            assertEquals(List.of("1", "2", "3"), ids(s));
        } finally {
            c.send(0, "PUT", "/_cluster/settings", "{\"persistent\":{\"search.concurrent_segment_search.mode\":null}}");
        }
    }

    @Test
    @Order(11)
    void notReadyAnswers503() throws Exception {
        // A shop-head index whose only copy cannot be allocated: no node has a table.
        TwoNodeCluster.Resp r = c.send(0, "PUT", "/stuck_v1?wait_for_active_shards=0", """
            {"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.baedal_hot.table": true,
              "index.routing.allocation.require._name": "nowhere"},
             "mappings": {"properties": {"id": {"type": "long"}}}}""");
        assertEquals(200, r.status(), r.raw());
        r = c.get(0, "/_baedal/hot/stuck_v1/_status");
        assertEquals(false, r.body().get("ready"), r.raw());
        assertEquals(false, map(map(r.body().get("nodes")).get("a")).get("has_copy"), r.raw());
        r = c.send(0, "POST", "/menus/_search", "{\"query\":{\"baedal_hot_shop\":{\"table\":\"stuck_v1\"}}}");
        assertEquals(503, r.status(), r.raw());
        r = c.send(1, "POST", "/menus/_search", "{\"sort\":[{\"baedal_hot\":{\"table\":\"stuck_v1\",\"field\":\"rating\"}}]}");
        assertEquals(503, r.status(), r.raw());
        r = c.send(1, "POST", "/menus/_search", "{\"ext\":{\"baedal_hot\":{\"table\":\"stuck_v1\"}}}");
        assertEquals(503, r.status(), r.raw());
        // Let the primary allocate: that node's table is built from its copy and becomes ready.
        r = c.send(0, "PUT", "/stuck_v1/_settings", "{\"index.routing.allocation.require._name\": null}");
        assertEquals(200, r.status(), r.raw());
        TwoNodeCluster.waitFor(() -> c.get(1, "/_baedal/hot/stuck_v1/_status").raw().contains("\"ready\":true"), "a stuck_v1 table ready");
        // A shop-head index with two shards gets tables that never become ready, and say why.
        r = c.send(0, "PUT", "/two_v1", """
            {"settings": {"number_of_shards": 2, "number_of_replicas": 0, "index.baedal_hot.table": true},
             "mappings": {"properties": {"id": {"type": "long"}}}}""");
        assertEquals(200, r.status(), r.raw());
        TwoNodeCluster.waitFor(() -> c.get(0, "/_baedal/hot/two_v1/_status").raw().contains("number_of_shards: 1"), "two_v1 reason");
        r = c.send(0, "POST", "/menus/_search", "{\"query\":{\"baedal_hot_shop\":{\"table\":\"two_v1\"}}}");
        assertEquals(503, r.status(), r.raw());
    }

    @Test
    @Order(12)
    void aTableThatDisagreesWithItsCopyIsFoundAndRebuilt() throws Exception {
        HotTables tables = c.nodes.get(1).injector().getInstance(HotTables.class);
        HotTable t = tables.copies().get("shops_v1").table;
        // A row ahead of its document (as an operation rolled back under the listener would
        // leave it) and a row missing.
        t.apply(new HotEntry(1, 50, false, false, 1, 1, 1, 1));
        assertTrue(t.remove(2, Long.MAX_VALUE));
        TwoNodeCluster.Resp r = c.get(0, "/_baedal/hot/shops/_status");
        assertEquals(false, r.body().get("agrees"), r.raw());
        assertEquals(2, map(map(r.body().get("nodes")).get("b")).get("disagreeing"), r.raw());
        assertEquals(0, map(map(r.body().get("nodes")).get("a")).get("disagreeing"), r.raw());
        TwoNodeCluster.waitFor(() -> Boolean.TRUE.equals(c.get(0, "/_baedal/hot/shops/_status").body().get("agrees")), "rebuilt");
        r = c.get(0, "/_baedal/hot/shops/_status");
        Map<String, Object> b = map(map(r.body().get("nodes")).get("b"));
        assertEquals(map(map(r.body().get("nodes")).get("a")).get("digest"), b.get("digest"), r.raw());
        assertTrue(((Number) b.get("rebuilds")).intValue() >= 2, r.raw());
        fetchedHotFields();
    }

    @Test
    @Order(13)
    void aJoiningNodeBuildsItsTableFromItsRecoveredCopy() throws Exception {
        int expected = shopsOn(0, "a");
        c.addNode("c");
        TwoNodeCluster.waitFor(() -> {
            Map<String, Object> n = map(map(c.get(0, "/_baedal/hot/shops/_status").body().get("nodes")).get("c"));
            return n != null && Boolean.TRUE.equals(n.get("ready"));
        }, "node c's table ready");
        assertEquals(expected, shopsOn(2, "c"));
        TwoNodeCluster.Resp r = c.get(2, "/_baedal/hot/shops/_status");
        assertEquals(true, r.body().get("agrees"), r.raw());
        // A write after the join reaches c's table through replication.
        r = c.send(2, "POST", "/_bulk", versioned("shops_v1", 4, 7, "\"version\":7,\"open\":false,\"delivery_minutes\":41,"
            + "\"delivery_fee\":1000,\"rating\":4.1,\"review_count\":9"));
        assertEquals(false, r.body().get("errors"), r.raw());
        HotTable t = c.nodes.get(2).injector().getInstance(HotTables.class).copies().get("shops_v1").table;
        HotTable.Row row = new HotTable.Row();
        assertTrue(t.readLive(4, row));
        assertEquals(7, row.version, "acknowledged, so applied on every in-sync copy");
        assertEquals(41, row.deliveryMinutes);
    }

    int shopsOn(int node, String name) throws Exception {
        TwoNodeCluster.Resp r = c.get(node, "/_baedal/hot/shops/_status");
        return ((Number) map(map(r.body().get("nodes")).get(name)).get("shops")).intValue();
    }

    @Test
    @Order(14)
    void deliveryRadiusFilterMatchesShopsThatDeliverToThePoint() throws Exception {
        TwoNodeCluster.Resp r = c.send(0, "PUT", "/geo", """
            {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
             "mappings": {"properties": {"id": {"type": "long"}, "location": {"type": "geo_point"},
               "delivery_radius_km": {"type": "double"}, "menus": {"type": "nested", "properties": {"name": {"type": "keyword"}}}}}}""");
        assertEquals(200, r.status(), r.raw());
        // One degree of latitude is about 111.2 km, so 0.018 degrees north is about 2.0 km.
        String bulk = doc("geo", 1, "\"location\":{\"lat\":37.5,\"lon\":127.0},\"delivery_radius_km\":3,\"menus\":[{\"name\":\"a\"}]")
            + doc("geo", 2, "\"location\":{\"lat\":37.5,\"lon\":127.0},\"menus\":[{\"name\":\"b\"}]") // no radius: delivers nowhere
            + doc("geo", 3, "\"delivery_radius_km\":50") // no location
            + doc("geo", 4, "\"location\":{\"lat\":37.6,\"lon\":127.0},\"delivery_radius_km\":20");
        r = c.send(1, "POST", "/_bulk?refresh=true", bulk);
        assertEquals(false, r.body().get("errors"), r.raw());
        String near = "{\"query\":{\"baedal_within_delivery_radius\":{\"lat\":37.518,\"lon\":127.0}},\"sort\":[{\"id\":\"asc\"}]}";
        r = c.send(0, "POST", "/geo/_search", near);
        assertEquals(200, r.status(), r.raw());
        assertEquals(List.of("1", "4"), ids(r), "2.0 km from shop 1 (radius 3 km), 9.1 km from shop 4 (radius 20 km)");
        String far = "{\"query\":{\"baedal_within_delivery_radius\":{\"lat\":37.54,\"lon\":127.0}},\"sort\":[{\"id\":\"asc\"}]}";
        assertEquals(List.of("4"), ids(c.send(1, "POST", "/geo/_search", far)), "4.4 km from shop 1 (radius 3 km)");
        r = c.send(0, "POST", "/geo/_search", "{\"query\":{\"baedal_within_delivery_radius\":{\"lat\":91,\"lon\":0}}}");
        assertEquals(400, r.status(), r.raw());
        r = c.send(0, "POST", "/menus/_search", "{\"query\":{\"baedal_within_delivery_radius\":{\"lat\":37.5,\"lon\":127.0}}}");
        assertTrue(r.status() == 400 || map(r.body().get("_shards")).get("failed") != (Object) 0, "an index without the fields fails: " + r.raw());
        assertTrue(r.raw().contains("delivery_radius_km"), r.raw());
    }

    /** Each node's rebuild count of its table of shops_v1, or null unless every table is ready and agrees. */
    Map<String, Integer> rebuildsIfConsistent() throws Exception {
        TwoNodeCluster.Resp r = c.get(0, "/_baedal/hot/shops/_status");
        if (!Boolean.TRUE.equals(r.body().get("ready")) || !Boolean.TRUE.equals(r.body().get("agrees"))) {
            return null;
        }
        Map<String, Integer> out = new HashMap<>();
        for (Map.Entry<String, Object> n : map(r.body().get("nodes")).entrySet()) {
            out.put(n.getKey(), ((Number) map(n.getValue()).get("rebuilds")).intValue());
        }
        return out;
    }

    @Test
    @Order(15)
    void aReplicaRebuildsItsTableWhenItsPrimaryChanges() throws Exception {
        AtomicReference<Map<String, Integer>> before = new AtomicReference<>();
        TwoNodeCluster.waitFor(() -> {
            before.set(rebuildsIfConsistent());
            return before.get() != null;
        }, "every table ready and equal to its copy");
        TwoNodeCluster.Resp r = c.get(0, "/_cluster/state/routing_table/shops_v1");
        String primaryNode = null;
        Map<String, Object> shards = map(map(map(map(r.body().get("routing_table")).get("indices")).get("shops_v1")).get("shards"));
        for (Object copy : (List<?>) shards.get("0")) {
            if (Boolean.TRUE.equals(map(copy).get("primary"))) {
                primaryNode = (String) map(copy).get("node");
            }
        }
        assertTrue(primaryNode != null, r.raw());
        // Fail the primary: a replica is promoted, and the other replica's next operation or search
        // sees the new primary term.
        r = c.send(0, "POST", "/_cluster/reroute", "{\"commands\":[{\"cancel\":{\"index\":\"shops_v1\",\"shard\":0,"
            + "\"node\":\"" + primaryNode + "\",\"allow_primary\":true}}]}");
        assertEquals(200, r.status(), r.raw());
        r = c.send(1, "POST", "/_bulk", versioned("shops_v1", 4, 8, "\"version\":8,\"open\":true,\"delivery_minutes\":42,"
            + "\"delivery_fee\":1000,\"rating\":4.1,\"review_count\":9"));
        assertEquals(false, r.body().get("errors"), r.raw());
        // The replica that was not promoted rebuilds its table (the copy that was the primary gets a
        // new table, counted from 0).
        TwoNodeCluster.waitFor(() -> {
            Map<String, Integer> now = rebuildsIfConsistent();
            return now != null && now.entrySet().stream().anyMatch(e -> e.getValue() > before.get().getOrDefault(e.getKey(), 0));
        }, "a replica's table rebuilt after its primary changed, and every table ready and equal to its copy");
        for (int node = 0; node < 3; node++) {
            HotTable t = c.nodes.get(node).injector().getInstance(HotTables.class).copies().get("shops_v1").table;
            HotTable.Row row = new HotTable.Row();
            assertTrue(t.readLive(4, row));
            assertEquals(8, row.version);
            assertEquals(42, row.deliveryMinutes);
        }
    }
}
