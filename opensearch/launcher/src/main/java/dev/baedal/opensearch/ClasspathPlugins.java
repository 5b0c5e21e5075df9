package dev.baedal.opensearch;

import java.io.IOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.opensearch.Version;
import org.opensearch.plugins.PluginInfo;

/**
 * The OpenSearch modules and plugins the launcher loads from the classpath (no plugins/ dir).
 *
 * <p>Invariant: {@link #verify} is called before the node is built, because OpenSearch's
 * PluginsService only logs a classpath plugin class it cannot load and starts without it.
 */
final class ClasspathPlugins {

    /** One plugin: its name, entry class and the plugins it extends through SPI. */
    record Spec(String name, String className, List<String> extendedPlugins) {}

    static final List<Spec> DEFAULT = List.of(
        new Spec("transport-netty4", "org.opensearch.transport.Netty4ModulePlugin", List.of()),
        new Spec("lang-painless", "org.opensearch.painless.PainlessModulePlugin", List.of()),
        new Spec("reindex", "org.opensearch.index.reindex.ReindexModulePlugin", List.of()),
        new Spec("mapper-extras", "org.opensearch.index.mapper.MapperExtrasModulePlugin", List.of()),
        new Spec("parent-join", "org.opensearch.join.ParentJoinModulePlugin", List.of()),
        // Ships a Painless extension: without extendedPlugins its script contexts do not compile.
        new Spec("analysis-common", "org.opensearch.analysis.common.CommonAnalysisModulePlugin", List.of("lang-painless")),
        new Spec("analysis-nori", "org.opensearch.plugin.analysis.nori.AnalysisNoriPlugin", List.of()),
        // baedal's own plugin (opensearch/hot-plugin, docs/hot-layout.md); baedal serve checks its name and version.
        new Spec("baedal-hot", "dev.baedal.opensearch.hot.HotTablePlugin", List.of())
    );

    /** Thrown when a plugin class is not on the classpath. */
    static final class MissingPluginException extends Exception {
        MissingPluginException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The default plugins but those named in {@code without}, then the extra classes. */
    static List<Spec> select(List<String> without, List<String> extraClassNames) {
        List<Spec> all = new ArrayList<>(DEFAULT);
        all.removeIf(s -> without.contains(s.name()));
        for (String cls : extraClassNames) {
            all.add(new Spec("extra-" + cls.substring(cls.lastIndexOf('.') + 1), cls, List.of()));
        }
        return List.copyOf(all);
    }

    /**
     * Loads every plugin class; fails on the first one that is missing or unloadable, or that more
     * than one jar of the classpath holds (a stale jar of an older build beside the current one:
     * which of them the JVM loads depends on the order of a directory listing).
     */
    static void verify(List<Spec> specs) throws MissingPluginException {
        ClassLoader loader = ClasspathPlugins.class.getClassLoader();
        for (Spec s : specs) {
            try {
                Class.forName(s.className(), false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                throw new MissingPluginException(
                    "plugin class " + s.className() + " (" + s.name() + ") not found on the classpath: " + e, e);
            }
            List<String> holders = new ArrayList<>();
            try {
                for (URL u : Collections.list(loader.getResources(s.className().replace('.', '/') + ".class"))) {
                    holders.add(u.toString());
                }
            } catch (IOException e) {
                throw new MissingPluginException("list the jars holding " + s.className() + ": " + e, e);
            }
            if (holders.size() > 1) {
                throw new MissingPluginException("plugin class " + s.className() + " (" + s.name() + ") is in more than one jar "
                    + "of the classpath, " + String.join(", ", holders) + "; remove the stale one (opensearch/README.md, \"Build\")", null);
            }
        }
    }

    /**
     * A plugin's own version, from its jar's manifest (Implementation-Version), as an installed
     * plugin reports its descriptor's; OpenSearch's version for the modules, which have none.
     */
    static String versionOf(Spec s) {
        try {
            Package p = Class.forName(s.className(), false, ClasspathPlugins.class.getClassLoader()).getPackage();
            if (p != null && p.getImplementationVersion() != null) {
                return p.getImplementationVersion();
            }
        } catch (ClassNotFoundException | LinkageError e) {
            // verify() has already failed the start for a missing class
        }
        return Version.CURRENT.toString();
    }

    static List<PluginInfo> toPluginInfos(List<Spec> specs) {
        List<PluginInfo> infos = new ArrayList<>();
        for (Spec s : specs) {
            infos.add(new PluginInfo(
                s.name(), s.name() + " (classpath)", versionOf(s), Version.CURRENT,
                Runtime.version().feature() + "", s.className(), s.extendedPlugins(), false));
        }
        return infos;
    }

    private ClasspathPlugins() {}
}
