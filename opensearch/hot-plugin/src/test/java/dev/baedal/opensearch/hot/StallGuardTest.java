package dev.baedal.opensearch.hot;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.Map;
import java.util.Set;
import org.opensearch.Version;
import org.opensearch.cluster.ClusterName;
import org.opensearch.cluster.ClusterState;
import org.opensearch.cluster.node.DiscoveryNode;
import org.opensearch.cluster.node.DiscoveryNodeRole;
import org.opensearch.cluster.node.DiscoveryNodes;
import org.opensearch.core.common.transport.TransportAddress;
import org.junit.jupiter.api.Test;

/** When another node's view confirms that a node which stood still is still in step. */
class StallGuardTest {

    static DiscoveryNode node(String id, String ephemeralId, int port) {
        return new DiscoveryNode(id, id, ephemeralId, "127.0.0.1", "127.0.0.1",
            new TransportAddress(InetAddress.getLoopbackAddress(), port), Map.of(),
            Set.of(DiscoveryNodeRole.CLUSTER_MANAGER_ROLE, DiscoveryNodeRole.DATA_ROLE), Version.CURRENT);
    }

    static ClusterState state(String local, String manager, long version, DiscoveryNode... nodes) {
        DiscoveryNodes.Builder b = DiscoveryNodes.builder().localNodeId(local).clusterManagerNodeId(manager);
        for (DiscoveryNode n : nodes) {
            b.add(n);
        }
        return ClusterState.builder(new ClusterName("c")).version(version).nodes(b).build();
    }

    private final DiscoveryNode a = node("a", "a1", 9301);
    private final DiscoveryNode b = node("b", "b1", 9302);

    @Test
    void theSameManagerAndVersionWithThisNodeAMemberConfirms() {
        assertNull(StallGuard.disagreement(state("a", "b", 7, a, b), state("b", "b", 7, a, b)));
        assertNull(StallGuard.disagreement(state("a", "b", 7, a, b), state("b", "b", 6, a, b)), "a node that lags agrees");
    }

    @Test
    void aRemovedNodeANewerStateOrAnotherManagerDoNot() {
        ClusterState mine = state("a", "b", 7, a, b);
        String removed = StallGuard.disagreement(mine, state("b", "b", 8, b));
        assertNotNull(removed);
        assertTrue(removed.contains("not in its cluster state"), removed);
        assertTrue(StallGuard.disagreement(mine, state("b", "b", 9, a, b)).contains("newer"));
        assertTrue(StallGuard.disagreement(mine, state("b", "a", 7, a, b)).contains("cluster manager"));
        assertTrue(StallGuard.disagreement(mine, state("b", "b", 7, node("a", "a2", 9301), b)).contains("not in its cluster state"),
            "the same node id restarted is another member");
    }
}
