package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * What the build stamped into this plugin (hot-plugin/pom.xml, resource {@code build.properties}):
 * the version the node reports and the wire version of the one message it sends between nodes.
 * They change together whenever a format changes; the pom can stamp other values into a second
 * build of the same sources, which is how the rolling-upgrade test gets a "previous" plugin.
 *
 * <p>Invariant: both are read once, when the class loads, from this jar's own resource, and a
 * jar without them (an unfiltered build) fails to load the plugin rather than guess.
 */
final class BuildStamp {

    static final String VERSION;
    static final int WIRE_VERSION;

    static {
        Properties p = new Properties();
        try (InputStream in = BuildStamp.class.getResourceAsStream("build.properties")) {
            if (in == null) {
                throw new IllegalStateException("baedal-hot: build.properties is missing from the plugin jar");
            }
            p.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("baedal-hot: read build.properties", e);
        }
        VERSION = p.getProperty("version", "");
        String wire = p.getProperty("wire_version", "");
        if (VERSION.isEmpty() || VERSION.contains("${") || !wire.matches("[0-9]{1,9}")) {
            throw new IllegalStateException("baedal-hot: build.properties was not stamped by the build: version ["
                + VERSION + "], wire_version [" + wire + "]");
        }
        WIRE_VERSION = Integer.parseInt(wire);
    }

    private BuildStamp() {}
}
