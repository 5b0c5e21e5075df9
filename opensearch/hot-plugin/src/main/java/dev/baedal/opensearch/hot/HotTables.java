package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.util.Bits;
import org.opensearch.OpenSearchStatusException;
import org.opensearch.cluster.ClusterChangedEvent;
import org.opensearch.cluster.ClusterState;
import org.opensearch.cluster.ClusterStateListener;
import org.opensearch.cluster.metadata.IndexAbstraction;
import org.opensearch.cluster.metadata.IndexMetadata;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.settings.Setting;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.core.index.Index;
import org.opensearch.core.index.shard.ShardId;
import org.opensearch.core.rest.RestStatus;
import org.opensearch.gateway.GatewayService;
import org.opensearch.index.IndexModule;
import org.opensearch.index.IndexSettings;
import org.opensearch.index.engine.Engine;
import org.opensearch.index.fieldvisitor.FieldsVisitor;
import org.opensearch.index.shard.IndexEventListener;
import org.opensearch.index.shard.IndexShard;
import org.opensearch.index.shard.IndexShardState;
import org.opensearch.index.shard.IndexingOperationListener;
import org.opensearch.threadpool.ThreadPool;
import org.opensearch.transport.TransportService;

/**
 * This node's hot tables: one per shop-head index ({@code index.baedal_hot.table: true}) of
 * which the node holds a copy, each fed by that copy's own operations (docs/hot-layout.md,
 * "Consistency").
 *
 * <p>How a table stays equal to its copy:
 * <ul>
 *   <li>An {@link IndexingOperationListener} applies every successful index and delete of the
 *       copy, whatever its origin: primary, replica, local translog replay and peer-recovery
 *       replay all go through {@code IndexShard.index}/{@code delete}, which call it.</li>
 *   <li>When a copy starts recovering, its table starts empty; when the copy is started, a scan
 *       of the local shard (no network) merges by version with the operations applied meanwhile,
 *       and the table becomes ready. When the copy closes, the table goes.</li>
 *   <li>A check compares the table with a scan of the copy ({@link #check}), periodically and
 *       for every {@code _status}; a table that disagrees is rebuilt from the copy.</li>
 * </ul>
 * So a copy that misses an operation is failed by its primary and recovered by OpenSearch, and
 * its table with it; once a bulk is acknowledged, every in-sync copy's table holds it.
 *
 * <p>When a replica's primary term changes, OpenSearch may have reset its engine to the global
 * checkpoint, rolling back operations the table applied; the table is rebuilt from the copy once
 * the reset is over (not ready meanwhile).
 *
 * <p>Invariants: a table is served only while it is ready, the index has one shard and document
 * replication, this node knows an elected cluster manager, and it has not stood still since the
 * cluster last confirmed it in step ({@link StallGuard}); everything else answers 503 naming the
 * reason. One scan or check runs at a time per copy.
 */
public final class HotTables implements ClusterStateListener {

    private static final Logger log = LogManager.getLogger(HotTables.class);

    /** {@code index.baedal_hot.table}: the index is a shop-head index with a hot table. */
    public static final Setting<Boolean> TABLE_SETTING =
        Setting.boolSetting("index.baedal_hot.table", false, Setting.Property.IndexScope);

    /** {@code baedal_hot.check_interval}: how often each node checks its tables against its copies. */
    public static final Setting<TimeValue> CHECK_INTERVAL_SETTING = Setting.timeSetting("baedal_hot.check_interval",
        TimeValue.timeValueSeconds(30), TimeValue.timeValueSeconds(1), Setting.Property.NodeScope);

    /** How long a check waits before it looks again at the rows that disagreed (in-flight operations). */
    static final long RECHECK_DELAY_MS = 200;

    /** The table of this node's copy of one shop-head index, and the copy. */
    static final class Copy {
        final HotTable table;
        final IndexShard shard;
        volatile Check lastCheck;
        // The primary term the table follows; a replica whose term changes rebuilds its table.
        final AtomicLong primaryTerm;

        Copy(HotTable table, IndexShard shard) {
            this.table = table;
            this.shard = shard;
            this.primaryTerm = new AtomicLong(shard.getOperationPrimaryTerm());
        }
    }

    /**
     * What one check found: the table's digest and the copy's (live rows only), the rows they
     * disagree on after a second look, and when it ran.
     */
    record Check(long tableDigest, long shardDigest, long shardRows, int disagreeing, long atMillis) {
        boolean agrees() {
            return disagreeing == 0;
        }
    }

    private final Map<String, Copy> copies = new ConcurrentHashMap<>();
    private final Map<IndexSearcher, HotRows> views = Collections.synchronizedMap(new WeakHashMap<>());
    private volatile ClusterService clusterService;
    private volatile ThreadPool threadPool;
    private volatile boolean clusterManagerKnown;
    private final StallGuard stallGuard = new StallGuard();

    void init(ClusterService clusterService, ThreadPool threadPool, Settings settings) {
        this.clusterService = clusterService;
        this.threadPool = threadPool;
        clusterService.addListener(this);
        stallGuard.start(clusterService, threadPool);
        threadPool.scheduleWithFixedDelay(this::checkAll, CHECK_INTERVAL_SETTING.get(settings), ThreadPool.Names.GENERIC);
    }

    @Override
    public void clusterChanged(ClusterChangedEvent event) {
        clusterManagerKnown = event.state().nodes().getClusterManagerNodeId() != null;
    }

    /** The transport the stall guard asks other nodes with (bound by Guice after createComponents). */
    void setTransportService(TransportService transportService) {
        stallGuard.setTransportService(transportService);
    }

    void close() {
        stallGuard.stop();
    }

    /** Registers the listeners that keep a table of this index, when it is a shop-head index. */
    void onIndexModule(IndexModule module) {
        if (TABLE_SETTING.get(module.getSettings())) {
            Listener l = new Listener(module.getIndex());
            module.addIndexOperationListener(l);
            module.addIndexEventListener(l);
        }
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

    /** The copy of a concrete index on this node, or null. */
    Copy copy(IndexMetadata im) {
        Copy c = copies.get(im.getIndex().getName());
        return c != null && c.table.indexUuid().equals(im.getIndexUUID()) ? c : null;
    }

    /** The ready table named by a request; 404 if unknown, 503 if this node cannot serve it. */
    public HotTable readyTable(String name) {
        IndexMetadata im = concreteIndex(name);
        Copy c = copy(im);
        if (c == null) {
            throw new OpenSearchStatusException("hot table [" + im.getIndex().getName()
                + "] is not on this node: it holds no started copy of the shop-head index", RestStatus.SERVICE_UNAVAILABLE);
        }
        if (!clusterManagerKnown) {
            throw new OpenSearchStatusException("hot table [" + im.getIndex().getName()
                + "] is not served: this node knows no elected cluster manager, so its copy may be behind", RestStatus.SERVICE_UNAVAILABLE);
        }
        String stalled = stallGuard.whyNotServing();
        if (stalled != null) {
            throw new OpenSearchStatusException("hot table [" + im.getIndex().getName() + "] is not served: " + stalled,
                RestStatus.SERVICE_UNAVAILABLE);
        }
        followPrimaryTerm(c);
        if (!c.table.ready()) {
            throw new OpenSearchStatusException("hot table [" + im.getIndex().getName() + "] is not ready on this node: "
                + c.table.notReadyReason(), RestStatus.SERVICE_UNAVAILABLE);
        }
        return c.table;
    }

    /**
     * The rows of a table as one search request sees them: the first read of a shop fixes its row
     * for the rest of the request (filter, sort and fetch of one shard request share the
     * request's searcher), so a row that changes in between cannot make them disagree.
     */
    public HotRows rows(String name, IndexSearcher searcher) {
        HotTable t = readyTable(name);
        if (searcher == null) {
            return new HotRows(t);
        }
        synchronized (views) {
            HotRows v = views.get(searcher);
            if (v == null || v.table() != t) {
                v = new HotRows(t);
                views.put(searcher, v);
            }
            return v;
        }
    }

    private final class Listener implements IndexingOperationListener, IndexEventListener {
        private final Index index;

        Listener(Index index) {
            this.index = index;
        }

        private HotTable table() {
            Copy c = copies.get(index.getName());
            if (c == null || !c.table.indexUuid().equals(index.getUUID())) {
                return null;
            }
            followPrimaryTerm(c);
            return c.table;
        }

        @Override
        public void postIndex(ShardId shardId, Engine.Index op, Engine.IndexResult result) {
            HotTable t = table();
            if (t == null || result.getResultType() != Engine.Result.Type.SUCCESS) {
                return;
            }
            try {
                t.apply(HeadSource.parse(op.source(), op.parsedDoc().getMediaType(), op.id(), result.getVersion()));
            } catch (IOException | RuntimeException e) {
                log.error("baedal-hot: cannot read shop-head document [{}] of [{}]; the table is not ready", op.id(), index, e);
                t.markNotReady("shop-head document [" + op.id() + "] is unreadable: " + e.getMessage());
            }
        }

        @Override
        public void postDelete(ShardId shardId, Engine.Delete op, Engine.DeleteResult result) {
            HotTable t = table();
            if (t == null || result.getResultType() != Engine.Result.Type.SUCCESS || !result.isFound()) {
                return;
            }
            try {
                t.remove(Long.parseLong(op.id()), result.getVersion());
            } catch (NumberFormatException e) {
                t.markNotReady("shop-head document [" + op.id() + "] has no numeric id");
            }
        }

        @Override
        public void beforeIndexShardRecovery(IndexShard shard, IndexSettings settings) {
            HotTable t = new HotTable(index.getName(), index.getUUID());
            if (settings.getNumberOfShards() != 1) {
                t.refuse("the shop-head index has " + settings.getNumberOfShards() + " shards; a hot table needs number_of_shards: 1");
            } else if (settings.isSegRepEnabledOrRemoteNode()) {
                t.refuse("the shop-head index uses segment replication or a remote store; a hot table needs document replication "
                    + "(index.replication.type: DOCUMENT), whose replicas apply each operation");
            }
            copies.put(index.getName(), new Copy(t, shard));
        }

        @Override
        public void afterIndexShardStarted(IndexShard shard) {
            Copy c = copies.get(index.getName());
            if (c != null && c.shard == shard) {
                // The scan reads the copy as it is now: follow the primary term from here on.
                c.primaryTerm.set(shard.getOperationPrimaryTerm());
                scheduleScan(c, c.table.generation(), "its copy started");
            }
        }

        @Override
        public void beforeIndexShardClosed(ShardId shardId, IndexShard shard, Settings settings) {
            Copy c = copies.get(index.getName());
            if (c != null && c.shard == shard) {
                copies.remove(index.getName(), c);
                c.table.refuse("the local copy of the shop-head index is closed");
            }
        }
    }

    /**
     * Rebuilds a replica's table when its primary term changed: the first operation of a new
     * primary resets a replica's engine to the global checkpoint when it holds operations above it
     * (IndexShard.bumpPrimaryTerm), and those may be in the table. A primary keeps its operations.
     */
    private void followPrimaryTerm(Copy c) {
        long term = c.shard.getOperationPrimaryTerm();
        long seen = c.primaryTerm.get();
        if (term == seen || !c.primaryTerm.compareAndSet(seen, term)) {
            return;
        }
        if (c.shard.routingEntry() != null && !c.shard.routingEntry().primary()) {
            log.info("baedal-hot: the primary of [{}] changed (term {}); rebuilding this replica's table from its copy, "
                + "which OpenSearch may have reset to the global checkpoint", c.table.index(), term);
            long gen = c.table.beginRebuild("rebuilding: the primary changed (term " + term
                + ") and the copy may have been reset to the global checkpoint");
            scheduleScan(c, gen, "its primary changed");
        }
    }

    private void scheduleScan(Copy c, long generation, String why) {
        threadPool.generic().execute(() -> {
            if (copies.get(c.table.index()) != c) {
                return;
            }
            if (c.shard.getActiveOperationsCount() == IndexShard.OPERATIONS_BLOCKED) {
                // A primary term change (and maybe an engine reset) is under way; scan what it leaves.
                threadPool.schedule(() -> scheduleScan(c, generation, why), TimeValue.timeValueMillis(50), ThreadPool.Names.GENERIC);
                return;
            }
            try {
                scan(c, generation, why);
            } catch (Exception e) {
                if (copies.get(c.table.index()) != c || c.shard.state() == IndexShardState.CLOSED) {
                    return;
                }
                log.warn("baedal-hot: scan of the local copy of [{}] failed, retrying in 2s: {}", c.table.index(), e.toString());
                threadPool.schedule(() -> scheduleScan(c, generation, why), TimeValue.timeValueSeconds(2), ThreadPool.Names.GENERIC);
            }
        });
    }

    /**
     * Loads every document of the local copy into the table, merged by version, and marks the
     * table ready unless a rebuild began since {@code generation}. Refreshes the copy first, so
     * every operation applied to the shard before the scan either is in the scan or went through
     * the listener into the table (it ran before the refresh).
     */
    private void scan(Copy c, long generation, String why) throws IOException {
        synchronized (c) {
            long start = System.nanoTime();
            c.shard.refresh("baedal-hot-scan");
            List<HotEntry> page = new ArrayList<>(4096);
            long[] n = {0};
            forEachDocument(c.shard, e -> {
                page.add(e);
                n[0]++;
                if (page.size() == 4096) {
                    c.table.apply(page);
                    page.clear();
                }
            });
            c.table.apply(page);
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            if (c.table.finishRebuild(generation, tookMs)) {
                log.info("baedal-hot: table of [{}] built from {} documents of the local copy in {} ms ({}): {} shops, {} tombstones",
                    c.table.index(), n[0], tookMs, why, c.table.shops(), c.table.tombstones());
            }
        }
    }

    interface EntryConsumer {
        void accept(HotEntry e) throws IOException;
    }

    /** Calls {@code f} with the row of every live document of the copy's current reader. */
    static void forEachDocument(IndexShard shard, EntryConsumer f) throws IOException {
        try (Engine.Searcher s = shard.acquireSearcher("baedal-hot")) {
            for (LeafReaderContext leaf : s.getIndexReader().leaves()) {
                StoredFields stored = leaf.reader().storedFields();
                Bits live = leaf.reader().getLiveDocs();
                for (int d = 0; d < leaf.reader().maxDoc(); d++) {
                    if (live != null && !live.get(d)) {
                        continue;
                    }
                    FieldsVisitor v = new FieldsVisitor(true);
                    stored.document(d, v);
                    if (v.source() == null) {
                        throw new IOException("shop-head document [" + v.id() + "] has no _source; a hot table needs it");
                    }
                    f.accept(HeadSource.parse(v.source(), null, v.id(), -1));
                }
            }
        }
    }

    /** Checks every local table; a table that disagrees with its copy is rebuilt. */
    private void checkAll() {
        for (Copy c : copies.values()) {
            if (c.table.ready()) {
                try {
                    check(c);
                } catch (Exception e) {
                    log.warn("baedal-hot: check of [{}] failed: {}", c.table.index(), e.toString());
                }
            }
        }
    }

    /**
     * Compares the table with its copy: scans the copy after a refresh and looks up each
     * document's row. A row that is not exactly its document's (missing, older, newer or
     * different), and a live row without a document, is a suspect: it may be an operation between
     * the engine and the listener, or one indexed after the refresh. Suspects are looked at again
     * after {@link #RECHECK_DELAY_MS} and a second refresh; one whose document did not change in
     * between must then match it exactly. What still disagrees is counted, logged, and makes the
     * table rebuild from the copy (not ready meanwhile). The digests are those of the live rows, as
     * {@link HotTable#digest} computes them, shown beside the verdict.
     */
    Check check(Copy c) throws IOException, InterruptedException {
        synchronized (c) {
            HotTable t = c.table;
            c.shard.refresh("baedal-hot-check");
            Map<Long, Long> suspects = new java.util.HashMap<>(); // id -> document version at the first look, -1 if none
            long[] shard = {0, 0}; // digest, documents
            LongSet seen = new LongSet();
            HotTable.Row row = new HotTable.Row();
            forEachDocument(c.shard, e -> {
                seen.add(e.id());
                shard[1]++;
                if (!e.deleted()) {
                    shard[0] += entryDigest(e);
                }
                if (!matches(t, e, row)) {
                    suspects.put(e.id(), e.version());
                }
            });
            long tableDigest = t.digest();
            t.forEachLiveId(id -> {
                if (!seen.contains(id)) {
                    suspects.put(id, -1L);
                }
            });
            int disagreeing = 0;
            if (!suspects.isEmpty()) {
                Thread.sleep(RECHECK_DELAY_MS);
                c.shard.refresh("baedal-hot-check");
                Map<Long, HotEntry> now = new java.util.HashMap<>();
                forEachDocument(c.shard, e -> {
                    if (suspects.containsKey(e.id())) {
                        now.put(e.id(), e);
                    }
                });
                for (Map.Entry<Long, Long> s : suspects.entrySet()) {
                    long id = s.getKey();
                    HotEntry doc = now.get(id);
                    if ((doc == null ? -1L : doc.version()) != s.getValue()) {
                        continue; // written meanwhile: in flight, not wrong
                    }
                    boolean ok = doc != null ? matches(t, doc, row) : !t.read(id, row) || row.deleted;
                    if (!ok) {
                        disagreeing++;
                        log.warn("baedal-hot: table of [{}] disagrees with its copy on shop {}: copy version {}, table version {}",
                            t.index(), id, s.getValue(), t.read(id, row) ? row.version : -1);
                    }
                }
            }
            Check result = new Check(tableDigest, shard[0], shard[1], disagreeing, System.currentTimeMillis());
            c.lastCheck = result;
            if (!result.agrees() && t.ready()) {
                log.warn("baedal-hot: table of [{}] disagrees with its copy on {} shops; rebuilding it from the copy", t.index(), disagreeing);
                long gen = t.beginRebuild("rebuilding: the table disagreed with the local copy on " + disagreeing + " shops");
                scheduleScan(c, gen, "it disagreed with its copy");
            }
            return result;
        }
    }

    /** Whether the table holds exactly a document's row. */
    private static boolean matches(HotTable t, HotEntry e, HotTable.Row row) {
        return t.read(e.id(), row) && row.version == e.version() && row.deleted == e.deleted()
            && (e.deleted() || row.digest(e.id()) == entryDigest(e));
    }

    static long entryDigest(HotEntry e) {
        return HotTable.rowDigest(e.id(), e.version(), e.open(), e.deliveryMinutes(), e.deliveryFee(), e.rating(), e.reviewCount());
    }

    /** A growable open-addressing set of longs, for the ids of one check. */
    static final class LongSet {
        private long[] keys = emptyKeys(64);
        private int size;

        private static long[] emptyKeys(int n) {
            long[] k = new long[n];
            Arrays.fill(k, HotTable.EMPTY);
            return k;
        }

        void add(long id) {
            if ((size + 1) * 2 > keys.length) {
                long[] old = keys;
                keys = emptyKeys(old.length * 2);
                size = 0;
                for (long k : old) {
                    if (k != HotTable.EMPTY) {
                        add(k);
                    }
                }
            }
            int i = slot(id);
            if (keys[i] != id) {
                keys[i] = id;
                size++;
            }
        }

        boolean contains(long id) {
            return keys[slot(id)] == id;
        }

        private int slot(long id) {
            int mask = keys.length - 1;
            int i = (int) HotTable.mix(id) & mask;
            while (keys[i] != id && keys[i] != HotTable.EMPTY) {
                i = (i + 1) & mask;
            }
            return i;
        }
    }

    /** This node's copies, for {@code _status}. */
    Map<String, Copy> copies() {
        return copies;
    }
}
