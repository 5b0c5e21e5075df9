package dev.baedal.opensearch;

import java.util.Collection;
import org.opensearch.env.Environment;
import org.opensearch.node.Node;
import org.opensearch.plugins.PluginInfo;

/**
 * A {@link Node} whose plugins come from the classpath, through Node's protected constructor
 * (the same way the OpenSearch test framework's MockNode does it).
 */
final class ClasspathNode extends Node {
    ClasspathNode(Environment environment, Collection<PluginInfo> plugins) {
        super(environment, plugins, true);
    }
}
