package dev.baedal.opensearch.hot;

import static org.opensearch.rest.RestRequest.Method.GET;
import static org.opensearch.rest.RestRequest.Method.POST;

import java.io.IOException;
import java.util.List;
import java.util.Locale;
import org.opensearch.OpenSearchStatusException;
import org.opensearch.action.FailedNodeException;
import org.opensearch.core.action.ActionListener;
import org.opensearch.core.rest.RestStatus;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.core.xcontent.XContentParser;
import org.opensearch.rest.BaseRestHandler;
import org.opensearch.rest.BytesRestResponse;
import org.opensearch.rest.RestRequest;
import org.opensearch.transport.client.node.NodeClient;

/**
 * The REST routes of docs/hot-layout.md: {@code POST /_baedal/hot/{table}/_update},
 * {@code GET /_baedal/hot/{table}/_status} and {@code POST /_baedal/hot/{table}/_rebuild}.
 *
 * <p>Invariant: the table name is resolved (alias to concrete index, 404 if not a hot table) and
 * the body parsed (400 naming the field) on the receiving node before anything is sent to other
 * nodes; the answer is 503 whenever a node failed, with the same body.
 */
public final class RestHotAction extends BaseRestHandler {

    /** The contract's "at most ~10 MB" for an update body. */
    static final int MAX_UPDATE_BYTES = 10 * 1024 * 1024;

    private final HotTables tables;

    public RestHotAction(HotTables tables) {
        this.tables = tables;
    }

    @Override
    public String getName() {
        return "baedal_hot_table";
    }

    @Override
    public List<Route> routes() {
        return List.of(
            new Route(POST, "/_baedal/hot/{table}/_update"),
            new Route(GET, "/_baedal/hot/{table}/_status"),
            new Route(POST, "/_baedal/hot/{table}/_rebuild"));
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) throws IOException {
        String name = request.param("table");
        String index = tables.concreteIndex(name).getIndex().getName();
        String path = request.path();
        HotNodesAction.Op op = path.endsWith("/_update") ? HotNodesAction.Op.UPDATE
            : path.endsWith("/_rebuild") ? HotNodesAction.Op.REBUILD : HotNodesAction.Op.STATUS;
        List<HotEntry> entries = List.of();
        if (op == HotNodesAction.Op.UPDATE) {
            if (!request.hasContent()) {
                throw new IllegalArgumentException("update needs a body {\"shops\": [...]}");
            }
            if (request.content().length() > MAX_UPDATE_BYTES) {
                throw new OpenSearchStatusException("update body of " + request.content().length() + " bytes is over "
                    + MAX_UPDATE_BYTES + "; split it", RestStatus.REQUEST_ENTITY_TOO_LARGE);
            }
            try (XContentParser p = request.contentParser()) {
                entries = HotUpdateParser.parse(p);
            }
        } else if (request.hasContent()) {
            request.content(); // accepted and ignored
        }
        HotNodesAction.Request req = new HotNodesAction.Request(op, index, entries);
        String localNode = client.getLocalNodeId();
        return channel -> client.execute(HotNodesAction.INSTANCE, req, new ActionListener<>() {
            @Override
            public void onResponse(HotNodesAction.Response r) {
                try {
                    XContentBuilder b = channel.newBuilder();
                    RestStatus status = render(b, op, index, r, localNode);
                    channel.sendResponse(new BytesRestResponse(status, b));
                } catch (Exception e) {
                    onFailure(e);
                }
            }

            @Override
            public void onFailure(Exception e) {
                try {
                    channel.sendResponse(new BytesRestResponse(channel, e));
                } catch (IOException io) {
                    channel.sendResponse(new BytesRestResponse(RestStatus.INTERNAL_SERVER_ERROR, io.toString()));
                }
            }
        });
    }

    /** Writes the contract's body for {@code op}; returns 503 when a node failed, else 200. */
    static RestStatus render(XContentBuilder b, HotNodesAction.Op op, String index, HotNodesAction.Response r, String localNode)
        throws IOException {
        int ok = r.getNodes().size();
        int failed = r.failures().size();
        boolean allReady = failed == 0 && r.getNodes().stream().allMatch(n -> n.ready);
        b.startObject();
        b.field("table", index);
        if (op == HotNodesAction.Op.UPDATE) {
            b.startObject("nodes").field("total", ok + failed).field("successful", ok).field("failed", failed).endObject();
            int applied = 0;
            int stale = 0;
            for (HotNodesAction.NodeResponse n : r.getNodes()) {
                if (n.getNode().getId().equals(localNode)) {
                    applied = n.applied;
                    stale = n.stale;
                }
            }
            b.field("applied", applied).field("stale", stale);
            failures(b, r.failures());
        } else {
            b.field("ready", allReady);
            b.startObject("nodes");
            for (HotNodesAction.NodeResponse n : r.getNodes()) {
                b.startObject(n.getNode().getName())
                    .field("ready", n.ready)
                    .field("shops", n.shops)
                    .field("tombstones", n.tombstones)
                    .field("bytes", n.bytes)
                    .field("digest", String.format(Locale.ROOT, "%016x", n.digest))
                    .field("rebuilds", n.rebuilds)
                    .field("last_rebuild_ms", n.lastRebuildMs)
                    .endObject();
            }
            b.endObject();
            if (failed > 0 || op == HotNodesAction.Op.REBUILD) {
                failures(b, r.failures());
            }
        }
        b.endObject();
        return failed > 0 ? RestStatus.SERVICE_UNAVAILABLE : RestStatus.OK;
    }

    private static void failures(XContentBuilder b, List<FailedNodeException> failures) throws IOException {
        b.startArray("failures");
        for (FailedNodeException f : failures) {
            Throwable cause = f.getCause() != null ? f.getCause() : f;
            b.startObject().field("node", f.nodeId()).field("reason", cause.toString()).endObject();
        }
        b.endArray();
    }
}
