package dev.baedal.opensearch;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Command-line options of the launcher, parsed without touching any OpenSearch or Log4j class
 * (the logging configuration reads a system property that is set from these options first).
 *
 * <p>Invariant: a successfully parsed instance has a non-empty node name, a home path, ports in
 * 0..65535 and well-formed seed hosts; every problem is reported as a {@link UsageException}
 * that names the offending argument.
 */
final class LauncherOptions {

    static final String USAGE = """
        usage: java -Xmx512m -cp 'baedal-opensearch-launcher.jar:lib/*' dev.baedal.opensearch.Launcher \\
                 --home DIR [options]

          --home DIR                       path.home (required; created if missing)
          --data-path DIR                  path.data (default: HOME/data)
          --node-name NAME                 node.name (default: node-1)
          --cluster-name NAME              cluster.name (default: baedal)
          --network-host HOST              network.host (default: 127.0.0.1)
          --http-port PORT                 http.port, 0..65535 (0 = any free port; default 9200-9300)
          --transport-port PORT            transport.port, 0..65535 (default 9300-9400)
          --seed-hosts H:P,H:P,...         discovery.seed_hosts
          --initial-cluster-managers A,B   cluster.initial_cluster_manager_nodes
          --setting KEY=VALUE              any other OpenSearch setting (repeatable; applied last)
          --without-plugin NAME            leave out one of the plugins loaded by default, e.g. baedal-hot
                                           for a node like a cluster without it (repeatable)
          --exit-on-stdin-eof              stop the node when stdin is closed (parent died)
          -h, --help                       print this help

        Without --seed-hosts and --initial-cluster-managers the node runs with
        discovery.type=single-node. cluster.routing.allocation.disk.threshold_enabled defaults
        to false (override with --setting). Heap: pass -Xmx/-Xms to java.
        """;

    String home;
    String dataPath;
    String nodeName = "node-1";
    String clusterName = "baedal";
    String networkHost = "127.0.0.1";
    Integer httpPort;
    Integer transportPort;
    List<String> seedHosts = List.of();
    List<String> initialClusterManagers = List.of();
    /** Extra settings from --setting, in order; later keys win. */
    final Map<String, String> settings = new LinkedHashMap<>();
    /** Hidden, for tests: additional plugin classes that must be on the classpath. */
    final List<String> extraPluginClasses = new ArrayList<>();
    /** Default plugins left out (--without-plugin), by name. */
    final List<String> withoutPlugins = new ArrayList<>();
    boolean exitOnStdinEof;
    boolean help;

    /** Thrown for a bad command line; the message names the argument. */
    static final class UsageException extends Exception {
        UsageException(String message) {
            super(message);
        }
    }

    boolean singleNode() {
        return seedHosts.isEmpty() && initialClusterManagers.isEmpty();
    }

    static LauncherOptions parse(String[] args) throws UsageException {
        LauncherOptions o = new LauncherOptions();
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String name = arg;
            String inline = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                inline = arg.substring(eq + 1);
            }
            switch (name) {
                case "-h", "--help" -> o.help = true;
                case "--exit-on-stdin-eof" -> {
                    if (inline != null) {
                        throw new UsageException("argument " + name + " takes no value");
                    }
                    o.exitOnStdinEof = true;
                }
                case "--without-plugin" -> {
                    String v = inline != null ? inline : next(args, ++i, name);
                    List<String> known = ClasspathPlugins.DEFAULT.stream().map(ClasspathPlugins.Spec::name).toList();
                    if (!known.contains(v)) {
                        throw new UsageException("argument --without-plugin: unknown plugin '" + v + "', allowed: "
                            + String.join(", ", known));
                    }
                    o.withoutPlugins.add(v);
                }
                case "--setting", "--extra-plugin-class" -> {
                    String v = inline != null ? inline : next(args, ++i, name);
                    if (name.equals("--setting")) {
                        int kv = v.indexOf('=');
                        if (kv <= 0) {
                            throw new UsageException("argument --setting: expected KEY=VALUE, got '" + v + "'");
                        }
                        o.settings.put(v.substring(0, kv).trim(), v.substring(kv + 1));
                    } else {
                        o.extraPluginClasses.add(nonEmpty(name, v));
                    }
                }
                case "--home", "--data-path", "--node-name", "--cluster-name", "--network-host",
                     "--http-port", "--transport-port", "--seed-hosts", "--initial-cluster-managers" -> {
                    if (!seen.add(name)) {
                        throw new UsageException("argument " + name + " given more than once");
                    }
                    String v = nonEmpty(name, inline != null ? inline : next(args, ++i, name));
                    switch (name) {
                        case "--home" -> o.home = v;
                        case "--data-path" -> o.dataPath = v;
                        case "--node-name" -> o.nodeName = v;
                        case "--cluster-name" -> o.clusterName = v;
                        case "--network-host" -> o.networkHost = v;
                        case "--http-port" -> o.httpPort = port(name, v);
                        case "--transport-port" -> o.transportPort = port(name, v);
                        case "--seed-hosts" -> o.seedHosts = seedHosts(name, v);
                        case "--initial-cluster-managers" -> o.initialClusterManagers = list(name, v);
                        default -> throw new AssertionError(name);
                    }
                }
                default -> throw new UsageException("unknown argument '" + arg + "'");
            }
        }
        if (!o.help && o.home == null) {
            throw new UsageException("missing required argument --home");
        }
        return o;
    }

    private static String next(String[] args, int i, String name) throws UsageException {
        if (i >= args.length || args[i].startsWith("--")) {
            throw new UsageException("argument " + name + " needs a value");
        }
        return args[i];
    }

    private static String nonEmpty(String name, String v) throws UsageException {
        if (v.isBlank()) {
            throw new UsageException("argument " + name + " needs a non-empty value");
        }
        return v.trim();
    }

    private static int port(String name, String v) throws UsageException {
        try {
            int p = Integer.parseInt(v);
            if (p >= 0 && p <= 65535) {
                return p;
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        throw new UsageException("argument " + name + ": invalid port '" + v + "' (want 0..65535)");
    }

    private static List<String> list(String name, String v) throws UsageException {
        List<String> out = new ArrayList<>();
        for (String part : v.split(",", -1)) {
            if (part.isBlank()) {
                throw new UsageException("argument " + name + ": empty element in '" + v + "'");
            }
            out.add(part.trim());
        }
        return List.copyOf(out);
    }

    private static List<String> seedHosts(String name, String v) throws UsageException {
        List<String> hosts = list(name, v);
        for (String h : hosts) {
            int colon = h.lastIndexOf(':');
            if (colon <= 0) {
                throw new UsageException("argument " + name + ": '" + h + "' is not HOST:PORT");
            }
            port(name, h.substring(colon + 1));
        }
        return hosts;
    }
}
