package dev.baedal.opensearch.hot;

import static org.opensearch.rest.RestRequest.Method.GET;

import java.io.IOException;
import java.util.List;
import java.util.Locale;
import org.opensearch.action.FailedNodeException;
import org.opensearch.core.action.ActionListener;
import org.opensearch.core.rest.RestStatus;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.rest.BaseRestHandler;
import org.opensearch.rest.BytesRestResponse;
import org.opensearch.rest.RestRequest;
import org.opensearch.transport.client.node.NodeClient;

/**
 * {@code GET /_baedal/hot/{table}/_status[?check=false]}: every data node's table of one
 * shop-head index, each checked against the node's copy unless {@code check=false}
 * (docs/hot-layout.md, "_status").
 *
 * <p>Invariant: the table name is resolved (alias to concrete index, 404 if not a hot table) on
 * the receiving node before anything is sent to other nodes; the answer is 503 whenever a node
 * failed, with the same body.
 */
public final class RestHotAction extends BaseRestHandler {

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
        return List.of(new Route(GET, "/_baedal/hot/{table}/_status"));
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) throws IOException {
        String index = tables.concreteIndex(request.param("table")).getIndex().getName();
        HotStatusAction.Request req = new HotStatusAction.Request(index, request.paramAsBoolean("check", true));
        return channel -> client.execute(HotStatusAction.INSTANCE, req, new ActionListener<>() {
            @Override
            public void onResponse(HotStatusAction.Response r) {
                try {
                    XContentBuilder b = channel.newBuilder();
                    RestStatus status = render(b, index, r);
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

    /** Writes the status body; returns 503 when a node failed, else 200. */
    static RestStatus render(XContentBuilder b, String index, HotStatusAction.Response r) throws IOException {
        int failed = r.failures().size();
        boolean allReady = failed == 0 && !r.getNodes().isEmpty() && r.getNodes().stream().allMatch(n -> n.ready);
        boolean allAgree = r.getNodes().stream().allMatch(n -> n.checked && n.disagreeing == 0);
        boolean checked = r.getNodes().stream().anyMatch(n -> n.checked);
        b.startObject();
        b.field("table", index);
        b.field("ready", allReady);
        if (checked) {
            b.field("agrees", failed == 0 && allReady && allAgree);
        }
        b.startObject("nodes");
        for (HotStatusAction.NodeResponse n : r.getNodes()) {
            b.startObject(n.getNode().getName())
                .field("has_copy", n.hasCopy)
                .field("ready", n.ready);
            if (!n.reason.isEmpty()) {
                b.field("reason", n.reason);
            }
            b.field("shops", n.shops)
                .field("tombstones", n.tombstones)
                .field("bytes", n.bytes)
                .field("rebuilds", n.rebuilds)
                .field("last_rebuild_ms", n.lastRebuildMs);
            if (n.checked) {
                b.field("digest", hex(n.tableDigest))
                    .field("shard_digest", hex(n.shardDigest))
                    .field("shard_documents", n.shardRows)
                    .field("disagreeing", n.disagreeing);
            }
            b.endObject();
        }
        b.endObject();
        if (failed > 0) {
            b.startArray("failures");
            for (FailedNodeException f : r.failures()) {
                Throwable cause = f.getCause() != null ? f.getCause() : f;
                b.startObject().field("node", f.nodeId()).field("reason", cause.toString()).endObject();
            }
            b.endArray();
        }
        b.endObject();
        return failed > 0 ? RestStatus.SERVICE_UNAVAILABLE : RestStatus.OK;
    }

    private static String hex(long v) {
        return String.format(Locale.ROOT, "%016x", v);
    }
}
