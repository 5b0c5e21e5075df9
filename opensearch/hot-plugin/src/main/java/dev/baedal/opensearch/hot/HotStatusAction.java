package dev.baedal.opensearch.hot;

import java.io.IOException;
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
 * The one message the plugin sends between nodes: every data node's report on its table of one
 * shop-head index (readiness, counts, and, unless the request says not to, a fresh
 * {@link HotTables#check} against its copy).
 *
 * <p>Invariants: every message starts with {@link #WIRE_VERSION}, and a node refuses a version it
 * does not speak with an error naming both; a node that fails or cannot be reached is in
 * {@code failures()}, never silently missing. The node operation runs on the GENERIC pool,
 * because a check scans the local copy.
 */
public final class HotStatusAction extends ActionType<HotStatusAction.Response> {

    public static final String NAME = "cluster:monitor/baedal/hot/status";
    public static final HotStatusAction INSTANCE = new HotStatusAction();

    /**
     * The format of this action's messages; it changes with the plugin version whenever they change.
     * Stamped by the build (hot-plugin/pom.xml, {@code baedal.hot.wire}).
     */
    static final int WIRE_VERSION = BuildStamp.WIRE_VERSION;

    private HotStatusAction() {
        super(NAME, Response::new);
    }

    static void readWireVersion(StreamInput in) throws IOException {
        int v = in.readVInt();
        if (v != WIRE_VERSION) {
            throw new IllegalStateException("baedal-hot message of wire version " + v + " but this node (baedal-hot "
                + BuildStamp.VERSION + ") speaks wire version " + WIRE_VERSION
                + "; every node needs the same baedal-hot version (docs/hot-layout.md, \"Upgrades\")");
        }
    }

    /** What is asked, of the cluster and of each node: one concrete index, checked or not. */
    record Ask(String index, boolean check) {
        static Ask read(StreamInput in) throws IOException {
            readWireVersion(in);
            return new Ask(in.readString(), in.readBoolean());
        }

        void write(StreamOutput out) throws IOException {
            out.writeVInt(WIRE_VERSION);
            out.writeString(index);
            out.writeBoolean(check);
        }
    }

    /** The cluster-wide request: the status of one concrete index's table on every data node. */
    public static final class Request extends BaseNodesRequest<Request> {
        final Ask ask;

        public Request(String index, boolean check) {
            super("data:true");
            ask = new Ask(index, check);
        }

        public Request(StreamInput in) throws IOException {
            super(in);
            ask = Ask.read(in);
        }

        @Override
        public void writeTo(StreamOutput out) throws IOException {
            super.writeTo(out);
            ask.write(out);
        }
    }

    /** What one node is asked. */
    public static final class NodeRequest extends TransportRequest {
        final Ask ask;

        NodeRequest(Request r) {
            ask = r.ask;
        }

        public NodeRequest(StreamInput in) throws IOException {
            super(in);
            ask = Ask.read(in);
        }

        @Override
        public void writeTo(StreamOutput out) throws IOException {
            super.writeTo(out);
            ask.write(out);
        }
    }

    /** One node's table, and what its check found (no check when the node has no ready table). */
    public static final class NodeResponse extends BaseNodeResponse {
        final boolean hasCopy;
        final boolean ready;
        final String reason;
        final long shops;
        final long tombstones;
        final long bytes;
        final long rebuilds;
        final long lastRebuildMs;
        final boolean checked;
        final long tableDigest;
        final long shardDigest;
        final long shardRows;
        final int disagreeing;

        NodeResponse(DiscoveryNode node, HotTable t, HotTables.Check check, String reason) {
            super(node);
            hasCopy = t != null;
            ready = t != null && t.ready() && reason == null;
            this.reason = reason != null ? reason : t == null || t.ready() ? "" : t.notReadyReason();
            shops = t == null ? 0 : t.shops();
            tombstones = t == null ? 0 : t.tombstones();
            bytes = t == null ? 0 : t.bytes();
            rebuilds = t == null ? 0 : t.rebuilds();
            lastRebuildMs = t == null ? -1 : t.lastRebuildMs();
            checked = check != null;
            tableDigest = check == null ? 0 : check.tableDigest();
            shardDigest = check == null ? 0 : check.shardDigest();
            shardRows = check == null ? 0 : check.shardRows();
            disagreeing = check == null ? 0 : check.disagreeing();
        }

        public NodeResponse(StreamInput in) throws IOException {
            super(in);
            readWireVersion(in);
            hasCopy = in.readBoolean();
            ready = in.readBoolean();
            reason = in.readString();
            shops = in.readVLong();
            tombstones = in.readVLong();
            bytes = in.readVLong();
            rebuilds = in.readVLong();
            lastRebuildMs = in.readLong();
            checked = in.readBoolean();
            tableDigest = in.readLong();
            shardDigest = in.readLong();
            shardRows = in.readVLong();
            disagreeing = in.readVInt();
        }

        @Override
        public void writeTo(StreamOutput out) throws IOException {
            super.writeTo(out);
            out.writeVInt(WIRE_VERSION);
            out.writeBoolean(hasCopy);
            out.writeBoolean(ready);
            out.writeString(reason);
            out.writeVLong(shops);
            out.writeVLong(tombstones);
            out.writeVLong(bytes);
            out.writeVLong(rebuilds);
            out.writeLong(lastRebuildMs);
            out.writeBoolean(checked);
            out.writeLong(tableDigest);
            out.writeLong(shardDigest);
            out.writeVLong(shardRows);
            out.writeVInt(disagreeing);
        }
    }

    /** Every data node's answer. */
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

    /**
     * Runs the check on each data node. Built by Guice once per node, it also hands the node's
     * transport to {@link HotTables} for the stall guard, which the plugin cannot reach earlier.
     */
    public static final class Transport extends TransportNodesAction<Request, Response, NodeRequest, NodeResponse> {
        private final HotTables tables;

        @Inject
        public Transport(ThreadPool threadPool, ClusterService clusterService, TransportService transportService,
                         ActionFilters actionFilters, HotTables tables) {
            super(NAME, threadPool, clusterService, transportService, actionFilters,
                Request::new, NodeRequest::new, ThreadPool.Names.GENERIC, NodeResponse.class);
            this.tables = tables;
            tables.setTransportService(transportService);
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
            IndexMetadata im = clusterService.state().metadata().index(r.ask.index());
            if (im == null) {
                throw new IllegalStateException("index [" + r.ask.index() + "] is not in this node's cluster state");
            }
            HotTables.Copy c = tables.copy(im);
            if (c == null) {
                return new NodeResponse(clusterService.localNode(), null, null, "this node holds no copy of the shop-head index");
            }
            String reason = null;
            try {
                tables.readyTable(r.ask.index());
            } catch (RuntimeException e) {
                reason = e.getMessage();
            }
            HotTables.Check check = null;
            if (r.ask.check() && c.table.ready()) {
                try {
                    check = tables.check(c);
                } catch (Exception e) {
                    throw new IllegalStateException("check of the table of [" + r.ask.index() + "] failed: " + e, e);
                }
            }
            return new NodeResponse(clusterService.localNode(), c.table, check, reason);
        }
    }
}
