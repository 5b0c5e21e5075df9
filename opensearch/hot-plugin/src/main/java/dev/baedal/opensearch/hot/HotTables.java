package dev.baedal.opensearch.hot;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.opensearch.OpenSearchStatusException;
import org.opensearch.action.admin.cluster.health.ClusterHealthResponse;
import org.opensearch.action.search.SearchResponse;
import org.opensearch.cluster.ClusterChangedEvent;
import org.opensearch.cluster.ClusterState;
import org.opensearch.cluster.ClusterStateListener;
import org.opensearch.cluster.metadata.IndexAbstraction;
import org.opensearch.cluster.metadata.IndexMetadata;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.settings.Setting;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.core.rest.RestStatus;
import org.opensearch.gateway.GatewayService;
import org.opensearch.search.SearchHit;
import org.opensearch.search.sort.FieldSortBuilder;
import org.opensearch.search.sort.SortOrder;
import org.opensearch.threadpool.ThreadPool;
import org.opensearch.transport.client.Client;

/**
 * This node's hot tables, one per concrete shop index with {@code index.baedal_hot.table: true},
 * and what keeps them ready: a {@link ClusterStateListener} that creates a table (and starts its
 * rebuild) when such an index appears in the cluster state, replaces it when the index is
 * recreated (new UUID), and drops it when the index goes away.
 *
 * <p>Invariants: at most one table per index name, for the index UUID the cluster state holds;
 * rebuilds of one table run one at a time; every failure to use a table that is unknown answers
 * 404, one that is not ready answers 503 ({@link #readyTable}).
 */
public final class HotTables implements ClusterStateListener {

    private static final Logger log = LogManager.getLogger(HotTables.class);

    /** {@code index.baedal_hot.table}: the index holds the durable record of a hot table. */
    public static final Setting<Boolean> TABLE_SETTING =
        Setting.boolSetting("index.baedal_hot.table", false, Setting.Property.IndexScope);

    static final int SCAN_PAGE = 5000;
    static final String[] SCAN_FIELDS = {
        "id", "version", "deleted", "open", "delivery_minutes", "delivery_fee", "rating", "review_count"};

    private final Map<String, HotTable> tables = new ConcurrentHashMap<>();
    private volatile ClusterService clusterService;
    private volatile Client client;
    private volatile ThreadPool threadPool;

    void init(ClusterService clusterService, Client client, ThreadPool threadPool) {
        this.clusterService = clusterService;
        this.client = client;
        this.threadPool = threadPool;
        clusterService.addListener(this);
    }

    /** The concrete index behind a table name (an index, or an alias's write index or single index). */
    public IndexMetadata concreteIndex(String name) {
        ClusterState state = clusterService.state();
        if (state.blocks().hasGlobalBlock(GatewayService.STATE_NOT_RECOVERED_BLOCK)) {
            throw new OpenSearchStatusException("hot table [" + name + "] is not ready: the cluster state is not recovered yet",
                RestStatus.SERVICE_UNAVAILABLE);
        }
        IndexAbstraction ia = state.metadata().getIndicesLookup().get(name);
        if (ia == null) {
            throw new OpenSearchStatusException("unknown hot table [" + name + "]: no such index or alias", RestStatus.NOT_FOUND);
        }
        IndexMetadata im = ia.getWriteIndex();
        if (im == null) {
            if (ia.getIndices().size() != 1) {
                throw new OpenSearchStatusException(
                    "hot table [" + name + "] is an alias of " + ia.getIndices().size() + " indices and none is its write index",
                    RestStatus.BAD_REQUEST);
            }
            im = ia.getIndices().get(0);
        }
        if (!TABLE_SETTING.get(im.getSettings())) {
            throw new OpenSearchStatusException(
                "unknown hot table [" + name + "]: index [" + im.getIndex().getName() + "] does not have index.baedal_hot.table: true",
                RestStatus.NOT_FOUND);
        }
        return im;
    }

    /** The table of a concrete index, created (not ready) if this node has not seen it yet. */
    public HotTable tableFor(IndexMetadata im) {
        String uuid = im.getIndexUUID();
        HotTable t = tables.compute(im.getIndex().getName(), (k, old) ->
            old != null && old.indexUuid().equals(uuid) ? old : new HotTable(k, uuid));
        return t;
    }

    /** The table named by a request, or 404; not ready answers 503. */
    public HotTable readyTable(String name) {
        HotTable t = tableFor(concreteIndex(name));
        if (!t.ready()) {
            throw notReady(t);
        }
        return t;
    }

    static OpenSearchStatusException notReady(HotTable t) {
        return new OpenSearchStatusException(
            "hot table [" + t.index() + "] is not ready on this node (rebuild from the shop index in progress)",
            RestStatus.SERVICE_UNAVAILABLE);
    }

    @Override
    public void clusterChanged(ClusterChangedEvent event) {
        if (!event.metadataChanged()) {
            return;
        }
        List<String> seen = new ArrayList<>();
        for (IndexMetadata im : event.state().metadata().indices().values()) {
            if (!TABLE_SETTING.get(im.getSettings()) || im.getState() == IndexMetadata.State.CLOSE) {
                continue; // a closed index has no table until it is opened again (and rebuilt)
            }
            seen.add(im.getIndex().getName());
            HotTable before = tables.get(im.getIndex().getName());
            HotTable t = tableFor(im);
            if (before != t || !t.rebuildScheduled) {
                t.rebuildScheduled = true;
                scheduleRebuild(t, TimeValue.ZERO);
            }
        }
        tables.keySet().retainAll(seen);
    }

    private void scheduleRebuild(HotTable t, TimeValue delay) {
        Runnable run = () -> {
            if (tables.get(t.index()) != t) {
                return; // index deleted or recreated meanwhile
            }
            try {
                rebuild(t);
            } catch (Exception e) {
                log.warn("baedal-hot: rebuild of [{}] failed, retrying in 2s: {}", t.index(), e.toString());
                scheduleRebuild(t, TimeValue.timeValueSeconds(2));
            }
        };
        if (delay.millis() == 0) {
            threadPool.generic().execute(run);
        } else {
            threadPool.schedule(run, delay, ThreadPool.Names.GENERIC);
        }
    }

    /**
     * Rebuilds one table from its shop index and blocks until it is ready: waits for the index's
     * primaries, refreshes it (so every write acknowledged before the rebuild is seen), then
     * scans {@code _source} sorted by {@code id} in pages with search_after, merging by version
     * with the updates that arrive meanwhile. Call from a GENERIC thread, never a transport one.
     */
    public void rebuild(HotTable t) {
        synchronized (t) {
            long start = System.nanoTime();
            long gen = t.beginRebuild();
            Client c = client;
            ClusterHealthResponse health = c.admin().cluster().prepareHealth(t.index())
                .setWaitForYellowStatus().setTimeout(TimeValue.timeValueSeconds(30)).get();
            if (health.isTimedOut()) {
                throw new OpenSearchStatusException("shop index [" + t.index() + "] is not yellow after 30s", RestStatus.SERVICE_UNAVAILABLE);
            }
            c.admin().indices().prepareRefresh(t.index()).get();
            Object[] after = null;
            long scanned = 0;
            while (true) {
                var req = c.prepareSearch(t.index())
                    .setSize(SCAN_PAGE)
                    .setVersion(true)
                    .setTrackTotalHits(false)
                    .setRequestCache(false)
                    .setFetchSource(SCAN_FIELDS, null)
                    .addSort(new FieldSortBuilder("id").order(SortOrder.ASC).unmappedType("long"));
                if (after != null) {
                    req.searchAfter(after);
                }
                SearchResponse resp = req.get(TimeValue.timeValueMinutes(2));
                if (resp.getFailedShards() > 0) {
                    throw new OpenSearchStatusException(
                        "rebuild scan of [" + t.index() + "] had " + resp.getFailedShards() + " failed shards",
                        RestStatus.SERVICE_UNAVAILABLE);
                }
                SearchHit[] hits = resp.getHits().getHits();
                if (hits.length == 0) {
                    break;
                }
                List<HotEntry> page = new ArrayList<>(hits.length);
                for (SearchHit h : hits) {
                    page.add(fromSource(h));
                }
                t.load(page);
                scanned += hits.length;
                after = hits[hits.length - 1].getSortValues();
                if (hits.length < SCAN_PAGE) {
                    break;
                }
            }
            int merged = mergePeersRecentUpdates(t);
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            t.finishRebuild(gen, tookMs);
            log.info("baedal-hot: rebuilt [{}] from {} documents and {} recent updates of the nodes in {} ms: {} shops, {} tombstones",
                t.index(), scanned, merged, tookMs, t.shops(), t.tombstones());
        }
    }

    /**
     * Merges, by version, the updates every node applied in the last
     * {@link HotTable#KEEP_UPDATES_SECONDS}. baedal broadcasts a row beside (not after) its shop
     * document's write, so a node whose table did not exist yet when the row was broadcast (it
     * joined the cluster meanwhile), and whose scan ran before the document was written, gets the
     * row from a peer. A node that does not answer fails the rebuild, which is retried: its rows
     * may be the only copy.
     */
    private int mergePeersRecentUpdates(HotTable t) {
        HotNodesAction.Response resp = client.execute(HotNodesAction.INSTANCE,
            new HotNodesAction.Request(HotNodesAction.Op.RECENT, t.index(), List.of())).actionGet(TimeValue.timeValueMinutes(1));
        if (resp.hasFailures()) {
            throw new OpenSearchStatusException("rebuild of [" + t.index() + "] could not read the recent updates of "
                + resp.failures().size() + " nodes: " + resp.failures().get(0).getMessage(), RestStatus.SERVICE_UNAVAILABLE);
        }
        int merged = 0;
        for (HotNodesAction.NodeResponse n : resp.getNodes()) {
            merged += t.load(n.recent).applied();
        }
        return merged;
    }

    static HotEntry fromSource(SearchHit h) {
        Map<String, Object> src = h.getSourceAsMap();
        long id = src != null && src.get("id") instanceof Number n ? n.longValue() : Long.parseLong(h.getId());
        long version = src != null && src.get("version") instanceof Number n ? n.longValue() : Math.max(h.getVersion(), 0);
        if (src == null || Boolean.TRUE.equals(src.get("deleted"))) {
            return HotEntry.tombstone(id, version);
        }
        return new HotEntry(id, version, false,
            Boolean.TRUE.equals(src.get("open")),
            intOf(src.get("delivery_minutes")),
            intOf(src.get("delivery_fee")),
            src.get("rating") instanceof Number n ? n.doubleValue() : 0,
            intOf(src.get("review_count")));
    }

    private static int intOf(Object o) {
        return o instanceof Number n ? n.intValue() : 0;
    }
}
