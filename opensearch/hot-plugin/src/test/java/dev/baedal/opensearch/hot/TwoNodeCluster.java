package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.opensearch.Version;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.PluginInfo;
import org.opensearch.transport.TransportService;

/**
 * Two real OpenSearch 3.8.0 nodes in this JVM (node "a" cluster manager + data, node "b" data
 * only), each with netty4 and the baedal-hot plugin from the classpath, talked to over HTTP.
 * Two nodes, so node requests, queries, sorts and fetched fields really cross the transport.
 */
final class TwoNodeCluster implements AutoCloseable {

    /** Node's protected constructor takes classpath plugins, as MockNode does. */
    static final class TestNode extends Node {
        TestNode(Environment env, Collection<PluginInfo> plugins) {
            super(env, plugins, true);
        }
    }

    record Resp(int status, Map<String, Object> body, String raw) {}

    final List<Node> nodes = new ArrayList<>();
    final List<String> http = new ArrayList<>();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final Path home;
    private final String seed;

    TwoNodeCluster(Path home) throws Exception {
        this.home = home;
        seed = start(home.resolve("a"), "a", null);
        start(home.resolve("b"), "b", seed);
        waitFor(() -> (Integer) get(0, "/_cluster/health").body().get("number_of_nodes") == 2, "2 nodes");
    }

    /** Starts one more data node that joins the cluster; it is closed with the others. */
    void addNode(String name) throws Exception {
        start(home.resolve(name), name, seed);
        int n = nodes.size();
        waitFor(() -> (Integer) get(0, "/_cluster/health").body().get("number_of_nodes") == n, n + " nodes");
    }

    private String start(Path home, String name, String seed) throws Exception {
        Settings.Builder s = Settings.builder()
            .put("path.home", home.toString())
            .put("node.name", name)
            .put("cluster.name", "baedal-hot-test")
            .put("network.host", "127.0.0.1")
            .put("http.port", 0)
            .put("transport.port", 0)
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("baedal_hot.check_interval", "1h"); // checks run through _status, when a test asks
        if (seed == null) {
            s.putList("cluster.initial_cluster_manager_nodes", "a");
        } else {
            s.putList("discovery.seed_hosts", seed).putList("node.roles", "data", "ingest");
        }
        Environment env = InternalSettingsPreparer.prepareEnvironment(s.build(), Map.of(), null, () -> name);
        List<PluginInfo> plugins = List.of(
            info("transport-netty4", "org.opensearch.transport.Netty4ModulePlugin"),
            info("baedal-hot", HotTablePlugin.class.getName()));
        Node n = new TestNode(env, plugins);
        n.start();
        nodes.add(n);
        http.add("http://" + n.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress());
        return n.injector().getInstance(TransportService.class).boundAddress().publishAddress().toString();
    }

    private static PluginInfo info(String name, String cls) {
        return new PluginInfo(name, name, Version.CURRENT.toString(), Version.CURRENT, "21", cls, List.of(), false);
    }

    Resp get(int node, String path) throws IOException, InterruptedException {
        return send(node, "GET", path, null);
    }

    Resp send(int node, String method, String path, String body) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(http.get(node) + path)).timeout(Duration.ofSeconds(60))
            .header("Content-Type", "application/json")
            .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> r = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
        Map<String, Object> m = r.body().startsWith("{") ? XContentHelper.convertToMap(JsonXContent.jsonXContent, r.body(), true) : Map.of();
        return new Resp(r.statusCode(), m, r.body());
    }

    interface Check {
        boolean ok() throws Exception;
    }

    static void waitFor(Check c, String what) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < end) {
            try {
                if (c.ok()) {
                    return;
                }
            } catch (Exception e) {
                // not yet
            }
            Thread.sleep(100);
        }
        throw new AssertionError("timed out waiting for " + what);
    }

    /** Stops every node, then removes the nodes' directories. */
    @Override
    public void close() throws Exception {
        for (int i = nodes.size() - 1; i >= 0; i--) {
            nodes.get(i).close();
            nodes.get(i).awaitClose(30, TimeUnit.SECONDS);
        }
        try (var paths = Files.walk(home)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
