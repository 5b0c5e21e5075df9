package dev.baedal.opensearch;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.logging.log4j.LogManager;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.transport.TransportService;

/**
 * Starts one real OpenSearch node in this JVM from the jars on the classpath, for baedal's
 * local stack, tests and benchmarks. Not for production: there users run their own cluster.
 *
 * <p>Contract with the caller: exactly one line {@code baedal-opensearch: started node NAME
 * http=HOST:PORT transport=HOST:PORT} on stdout once the node accepts requests; OpenSearch's own
 * logs go to stderr. Exit codes: 2 bad command line, 3 plugin class missing (or held by two
 * jars), 1 node failed to start. SIGTERM closes the node (and waits for it) so the data directory stays consistent.
 */
public final class Launcher {

    static final String PREFIX = "baedal-opensearch: ";
    static final int EXIT_START_FAILED = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_MISSING_PLUGIN = 3;
    private static final long CLOSE_TIMEOUT_SECONDS = 30;

    public static void main(String[] args) {
        LauncherOptions opts;
        try {
            opts = LauncherOptions.parse(args);
        } catch (LauncherOptions.UsageException e) {
            System.err.println(PREFIX + e.getMessage());
            System.err.println(PREFIX + "run with --help for the list of arguments");
            System.exit(EXIT_USAGE);
            return;
        }
        if (opts.help) {
            System.out.print(LauncherOptions.USAGE);
            return;
        }
        // Read by log4j2.properties; must be set before the first Log4j/OpenSearch class loads.
        System.setProperty("baedal.node.name", opts.nodeName);

        List<ClasspathPlugins.Spec> plugins = ClasspathPlugins.select(opts.withoutPlugins, opts.extraPluginClasses);
        try {
            ClasspathPlugins.verify(plugins);
        } catch (ClasspathPlugins.MissingPluginException e) {
            System.err.println(PREFIX + "FATAL: " + e.getMessage());
            System.exit(EXIT_MISSING_PLUGIN);
            return;
        }

        Node node;
        try {
            Files.createDirectories(Path.of(opts.home));
            Settings settings = settings(opts);
            Environment env = InternalSettingsPreparer.prepareEnvironment(
                settings, Map.of(), null, () -> opts.nodeName);
            node = new ClasspathNode(env, ClasspathPlugins.toPluginInfos(plugins));
        } catch (Exception | LinkageError e) {
            fail("failed to build node " + opts.nodeName, e);
            return;
        }

        AtomicBoolean stopping = new AtomicBoolean();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            closeNode(node, opts.nodeName);
        }, "baedal-opensearch-shutdown"));

        try {
            node.start();
        } catch (Exception | LinkageError e) {
            if (stopping.get()) {
                return; // SIGTERM during start: the hook is closing the node.
            }
            fail("failed to start node " + opts.nodeName, e);
            return;
        }

        String http = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress().toString();
        String transport = node.injector().getInstance(TransportService.class).boundAddress().publishAddress().toString();
        System.out.println(PREFIX + "started node " + opts.nodeName + " http=" + http + " transport=" + transport);
        System.out.flush();

        if (opts.exitOnStdinEof) {
            Thread watcher = new Thread(Launcher::exitOnStdinEof, "baedal-opensearch-stdin");
            watcher.setDaemon(true);
            watcher.start();
        }
        try {
            new CountDownLatch(1).await(); // Node threads are daemons; keep the JVM up until a signal.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Defaults, then the named arguments, then --setting (which wins). */
    static Settings settings(LauncherOptions o) {
        Settings.Builder b = Settings.builder()
            .put("path.home", o.home)
            .put("node.name", o.nodeName)
            .put("cluster.name", o.clusterName)
            .put("network.host", o.networkHost)
            // A nearly full dev disk must not turn indices read-only.
            .put("cluster.routing.allocation.disk.threshold_enabled", false);
        if (o.dataPath != null) {
            b.put("path.data", o.dataPath);
        }
        if (o.httpPort != null) {
            b.put("http.port", o.httpPort);
        }
        if (o.transportPort != null) {
            b.put("transport.port", o.transportPort);
        }
        if (o.singleNode()) {
            b.put("discovery.type", "single-node");
        } else {
            if (!o.seedHosts.isEmpty()) {
                b.putList("discovery.seed_hosts", o.seedHosts);
            }
            if (!o.initialClusterManagers.isEmpty()) {
                b.putList("cluster.initial_cluster_manager_nodes", o.initialClusterManagers);
            }
        }
        o.settings.forEach(b::put);
        return b.build();
    }

    private static void closeNode(Node node, String name) {
        try {
            node.close();
            if (!node.awaitClose(CLOSE_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                System.err.println(PREFIX + "node " + name + " did not close within " + CLOSE_TIMEOUT_SECONDS + "s");
            }
            System.out.println(PREFIX + "stopped node " + name);
        } catch (IOException | RuntimeException e) {
            System.err.println(PREFIX + "error closing node " + name + ": " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            System.out.flush();
            LogManager.shutdown(); // log4j2.properties disables Log4j's own shutdown hook.
        }
    }

    private static void exitOnStdinEof() {
        try (InputStream in = System.in) {
            byte[] buf = new byte[256];
            while (in.read(buf) >= 0) {
                // discard
            }
        } catch (IOException e) {
            // treat a broken stdin like EOF
        }
        System.err.println(PREFIX + "stdin closed, stopping");
        System.exit(0);
    }

    private static void fail(String what, Throwable e) {
        System.err.println(PREFIX + "FATAL: " + what + ": " + e);
        e.printStackTrace(System.err);
        System.err.flush();
        System.exit(EXIT_START_FAILED);
    }

    private Launcher() {}
}
