package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.opensearch.action.ActionType;
import org.opensearch.action.FailedNodeException;
import org.opensearch.action.support.ActionFilters;
import org.opensearch.action.support.nodes.BaseNodeResponse;
import org.opensearch.action.support.nodes.BaseNodesRequest;
import org.opensearch.action.support.nodes.BaseNodesResponse;
import org.opensearch.action.support.nodes.TransportNodesAction;
import org.opensearch.cluster.ClusterName;
import org.opensearch.cluster.metadata.IndexMetadata;
import org.opensearch.cluster.node.DiscoveryNode;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.inject.Inject;
import org.opensearch.core.common.io.stream.StreamInput;
import org.opensearch.core.common.io.stream.StreamOutput;
import org.opensearch.threadpool.ThreadPool;
import org.opensearch.transport.TransportRequest;
import org.opensearch.transport.TransportService;

/**
 * The one transport action behind the three REST routes: it runs an operation (update, status or
 * rebuild) on the hot table of one concrete index on every node of the cluster, the local node
 * included ({@link BaseNodesRequest} with no node ids), and gathers each node's counts. A fourth
 * operation, used by a rebuild and not by REST, gathers every node's recent updates
 * ({@link HotTable#recentUpdates}).
 *
 * <p>Invariant: a node that fails or cannot be reached is in {@code failures()}, never silently
 * missing; the REST layer answers 503 when there is any. The node operation runs on the GENERIC
 * pool, because a rebuild blocks on searches.
 */
public final class HotNodesAction extends ActionType<HotNodesAction.Response> {

    public static final String NAME = "cluster:admin/baedal/hot/nodes";
    public static final HotNodesAction INSTANCE = new HotNodesAction();

    private HotNodesAction() {
        super(NAME, Response::new);
    }

    /** What each node does. */
    public enum Op { UPDATE, STATUS, REBUILD, RECENT }

    /** The cluster-wide request: an operation on one concrete index's table. */
    public static final class Request extends BaseNodesRequest<Request> {
        final Op op;
        final String index;
        final List<HotEntry> entries;

        public Request(Op op, String index, List<HotEntry> entries) {
            super((String[]) null);
            this.op = op;
            this.index = index;
            this.entries = entries;
        }

        public Request(StreamInput in) throws IOException {
            super(in);
            op = in.readEnum(Op.class);
            index = in.readString();
            entries = readEntries(in);
        }

        @Override
        public void writeTo(StreamOutput out) throws IOException {
            super.writeTo(out);
            out.writeEnum(op);
            out.writeString(index);
            writeEntries(out, entries);
        }
    }

    /** What one node is asked: the same operation, index and entries. */
    public static final class NodeRequest extends TransportRequest {
        final Op op;
        final String index;
        final List<HotEntry> entries;

        NodeRequest(Request r) {
            op = r.op;
            index = r.index;
            entries = r.entries;
        }

        public NodeRequest(StreamInput in) throws IOException {
            super(in);
            op = in.readEnum(Op.class);
            index = in.readString();
            entries = readEntries(in);
        }

        @Override
        public void writeTo(StreamOutput out) throws IOException {
            super.writeTo(out);
            out.writeEnum(op);
            out.writeString(index);
            writeEntries(out, entries);
        }
    }

    static List<HotEntry> readEntries(StreamInput in) throws IOException {
        int n = in.readVInt();
        List<HotEntry> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(new HotEntry(in.readLong(), in.readVLong(), in.readBoolean(), in.readBoolean(),
                in.readInt(), in.readInt(), in.readDouble(), in.readInt()));
        }
        return out;
    }

    static void writeEntries(StreamOutput out, List<HotEntry> entries) throws IOException {
        out.writeVInt(entries.size());
        for (HotEntry e : entries) {
            out.writeLong(e.id());
            out.writeVLong(e.version());
            out.writeBoolean(e.deleted());
            out.writeBoolean(e.open());
            out.writeInt(e.deliveryMinutes());
            out.writeInt(e.deliveryFee());
            out.writeDouble(e.rating());
            out.writeInt(e.reviewCount());
        }
    }

    /**
     * One node's table after the operation (and, for an update, its applied/stale counts; for
     * {@link Op#RECENT}, its recent updates).
     */
    public static final class NodeResponse extends BaseNodeResponse {
        final boolean ready;
        final long shops;
        final long tombstones;
        final long bytes;
        /** {@link HotTable#digest}, computed for status and rebuild answers only (else 0). */
        final long digest;
        final long rebuilds;
        final long lastRebuildMs;
        final int applied;
        final int stale;
        final List<HotEntry> recent;

        NodeResponse(DiscoveryNode node, HotTable t, boolean withDigest, int applied, int stale, List<HotEntry> recent) {
            super(node);
            ready = t.ready();
            shops = t.shops();
            tombstones = t.tombstones();
            bytes = t.bytes();
            digest = withDigest ? t.digest() : 0;
            rebuilds = t.rebuilds();
            lastRebuildMs = t.lastRebuildMs();
            this.applied = applied;
            this.stale = stale;
            this.recent = recent;
        }

        public NodeResponse(StreamInput in) throws IOException {
            super(in);
            ready = in.readBoolean();
            shops = in.readVLong();
            tombstones = in.readVLong();
            bytes = in.readVLong();
            digest = in.readLong();
            rebuilds = in.readVLong();
            lastRebuildMs = in.readLong();
            applied = in.readVInt();
            stale = in.readVInt();
            recent = readEntries(in);
        }

        @Override
        public void writeTo(StreamOutput out) throws IOException {
            super.writeTo(out);
            out.writeBoolean(ready);
            out.writeVLong(shops);
            out.writeVLong(tombstones);
            out.writeVLong(bytes);
            out.writeLong(digest);
            out.writeVLong(rebuilds);
            out.writeLong(lastRebuildMs);
            out.writeVInt(applied);
            out.writeVInt(stale);
            writeEntries(out, recent);
        }
    }

    /** Every node's answer, and the id of the node that received the REST request. */
    public static final class Response extends BaseNodesResponse<NodeResponse> {
        public Response(ClusterName clusterName, List<NodeResponse> nodes, List<FailedNodeException> failures) {
            super(clusterName, nodes, failures);
        }

        public Response(StreamInput in) throws IOException {
            super(in);
        }

        @Override
        protected List<NodeResponse> readNodesFrom(StreamInput in) throws IOException {
            return in.readList(NodeResponse::new);
        }

        @Override
        protected void writeNodesTo(StreamOutput out, List<NodeResponse> nodes) throws IOException {
            out.writeList(nodes);
        }
    }

    /** Runs the operation on each node. */
    public static final class Transport extends TransportNodesAction<Request, Response, NodeRequest, NodeResponse> {
        private final HotTables tables;

        @Inject
        public Transport(ThreadPool threadPool, ClusterService clusterService, TransportService transportService,
                         ActionFilters actionFilters, HotTables tables) {
            super(NAME, threadPool, clusterService, transportService, actionFilters,
                Request::new, NodeRequest::new, ThreadPool.Names.GENERIC, NodeResponse.class);
            this.tables = tables;
        }

        @Override
        protected Response newResponse(Request request, List<NodeResponse> responses, List<FailedNodeException> failures) {
            return new Response(clusterService.getClusterName(), responses, failures);
        }

        @Override
        protected NodeRequest newNodeRequest(Request request) {
            return new NodeRequest(request);
        }

        @Override
        protected NodeResponse newNodeResponse(StreamInput in) throws IOException {
            return new NodeResponse(in);
        }

        @Override
        protected NodeResponse nodeOperation(NodeRequest r) {
            IndexMetadata im = clusterService.state().metadata().index(r.index);
            if (im == null) {
                throw new IllegalStateException("index [" + r.index + "] is not in this node's cluster state");
            }
            HotTable t = tables.tableFor(im);
            int applied = 0;
            int stale = 0;
            List<HotEntry> recent = List.of();
            switch (r.op) {
                case UPDATE -> {
                    HotTable.Applied a = t.apply(r.entries);
                    applied = a.applied();
                    stale = a.stale();
                }
                case REBUILD -> tables.rebuild(t);
                case RECENT -> recent = t.recentUpdates();
                case STATUS -> { }
            }
            boolean withDigest = r.op == Op.STATUS || r.op == Op.REBUILD;
            return new NodeResponse(clusterService.localNode(), t, withDigest, applied, stale, recent);
        }
    }
}
