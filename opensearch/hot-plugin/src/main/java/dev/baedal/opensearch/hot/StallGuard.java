package dev.baedal.opensearch.hot;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.opensearch.action.admin.cluster.state.ClusterStateAction;
import org.opensearch.action.admin.cluster.state.ClusterStateRequest;
import org.opensearch.action.admin.cluster.state.ClusterStateResponse;
import org.opensearch.cluster.ClusterState;
import org.opensearch.cluster.node.DiscoveryNode;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.core.common.io.stream.StreamInput;
import org.opensearch.threadpool.ThreadPool;
import org.opensearch.transport.TransportException;
import org.opensearch.transport.TransportRequestOptions;
import org.opensearch.transport.TransportResponseHandler;
import org.opensearch.transport.TransportService;

/**
 * Keeps a node that stood still from serving hot searches until the cluster confirms it is
 * still in step (docs/hot-layout.md, "A node that stood still").
 *
 * <p>A node paused by SIGSTOP, a long GC or a starved host misses what happened meanwhile: it
 * may have been removed from the cluster and its copy failed, while its own cluster state still
 * names a cluster manager and routes searches to that copy. OpenSearch's own fault detection
 * tells it so only after a few leader checks, seconds later. So a thread ticks every
 * {@link #TICK_MS}; a gap above {@link #STALL_MS} between ticks is a stall, and so is a tick
 * that is late right now (the thread has not run since). After a stall the node asks every
 * other node of the last committed voting configuration for its own cluster state (nodes only),
 * and serves again once a majority of that configuration, itself included, agrees with it: the
 * same cluster manager, this node a member, and no newer state than this node's.
 *
 * <p>Invariants: {@link #whyNotServing} is null only when no stall is in progress and the last
 * one was confirmed; a confirmation counts only for the stall it was started for.
 */
final class StallGuard {

    private static final Logger log = LogManager.getLogger(StallGuard.class);

    static final long TICK_MS = 100;
    static final long STALL_MS = 1000;
    private static final TimeValue ASK_TIMEOUT = TimeValue.timeValueSeconds(2);
    private static final TimeValue RETRY_AFTER = TimeValue.timeValueMillis(500);

    private final AtomicLong stalls = new AtomicLong();
    private volatile long lastTickNanos = System.nanoTime();
    private volatile String unconfirmed; // why this node does not serve after a stall; null once confirmed
    private volatile Thread ticker;
    private ClusterService clusterService;
    private ThreadPool threadPool;
    private volatile TransportService transportService;

    void start(ClusterService clusterService, ThreadPool threadPool) {
        this.clusterService = clusterService;
        this.threadPool = threadPool;
        Thread t = new Thread(this::tick, "baedal-hot-stall-guard");
        t.setDaemon(true);
        ticker = t;
        t.start();
    }

    /** The transport to ask the other nodes with; bound once Guice built it. */
    void setTransportService(TransportService transportService) {
        this.transportService = transportService;
    }

    void stop() {
        Thread t = ticker;
        ticker = null;
        if (t != null) {
            t.interrupt();
        }
    }

    /** Why this node's tables must not serve now, or null when they may. */
    String whyNotServing() {
        long lateMs = (System.nanoTime() - lastTickNanos) / 1_000_000;
        if (lateMs > STALL_MS) {
            return "this node stood still for " + lateMs + " ms (a pause or a long GC) and may have missed cluster changes";
        }
        return unconfirmed;
    }

    private void tick() {
        while (ticker == Thread.currentThread()) {
            try {
                Thread.sleep(TICK_MS);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            long gapMs = (now - lastTickNanos) / 1_000_000;
            if (gapMs > STALL_MS) {
                long stall = stalls.incrementAndGet();
                unconfirmed = "this node stood still for " + gapMs + " ms (a pause or a long GC) and the cluster has not yet "
                    + "confirmed that it is still in step";
                log.warn("baedal-hot: this node stood still for {} ms; its hot tables serve no search until a majority of the "
                    + "cluster confirms it is still in step", gapMs);
                threadPool.generic().execute(() -> confirm(stall));
            }
            lastTickNanos = now;
        }
    }

    /** Asks the voting nodes whether this node is still in step; serves again on a majority, else retries. */
    private void confirm(long stall) {
        if (stalls.get() != stall) {
            return;
        }
        if (!clusterService.getClusterApplierService().isInitialClusterStateSet()) {
            retry(stall, "this node has no cluster state yet");
            return;
        }
        ClusterState local = clusterService.state();
        TransportService transport = transportService;
        Set<String> voting = local.getLastCommittedConfiguration().getNodeIds();
        DiscoveryNode self = local.nodes().getLocalNode();
        if (transport == null || local.nodes().getClusterManagerNodeId() == null || voting.isEmpty()) {
            retry(stall, "this node knows no elected cluster manager yet");
            return;
        }
        List<DiscoveryNode> ask = new ArrayList<>();
        for (String id : voting) {
            DiscoveryNode n = local.nodes().get(id);
            if (n != null && !n.equals(self)) {
                ask.add(n);
            }
        }
        AtomicInteger agree = new AtomicInteger(voting.contains(self.getId()) ? 1 : 0);
        AtomicInteger left = new AtomicInteger(ask.size());
        List<String> disagreements = Collections.synchronizedList(new ArrayList<>());
        Runnable done = () -> {
            if (agree.get() * 2 > voting.size()) {
                if (stalls.get() == stall) {
                    unconfirmed = null;
                    log.info("baedal-hot: {} of {} voting nodes confirm this node is in step after its stall; its hot tables serve again",
                        agree.get(), voting.size());
                }
            } else {
                retry(stall, agree.get() + " of " + voting.size() + " voting nodes confirm it is still in step ("
                    + String.join("; ", disagreements) + ")");
            }
        };
        if (ask.isEmpty()) {
            done.run();
            return;
        }
        ClusterStateRequest request = new ClusterStateRequest().clear().nodes(true).local(true);
        for (DiscoveryNode n : ask) {
            transport.sendRequest(n, ClusterStateAction.NAME, request,
                TransportRequestOptions.builder().withTimeout(ASK_TIMEOUT).build(),
                new TransportResponseHandler<ClusterStateResponse>() {
                    @Override
                    public ClusterStateResponse read(StreamInput in) throws IOException {
                        return new ClusterStateResponse(in);
                    }

                    @Override
                    public void handleResponse(ClusterStateResponse response) {
                        String why = disagreement(clusterService.state(), response.getState());
                        if (why == null) {
                            agree.incrementAndGet();
                        } else {
                            disagreements.add(n.getName() + ": " + why);
                        }
                        if (left.decrementAndGet() == 0) {
                            done.run();
                        }
                    }

                    @Override
                    public void handleException(TransportException e) {
                        disagreements.add(n.getName() + ": " + e.getMessage());
                        if (left.decrementAndGet() == 0) {
                            done.run();
                        }
                    }

                    @Override
                    public String executor() {
                        return ThreadPool.Names.SAME;
                    }
                });
        }
    }

    /**
     * Why another node's cluster state (nodes only) does not show this node in step with it, or
     * null. A cluster manager elected meanwhile publishes a newer state, so the version also
     * catches a node that was the cluster manager and was replaced while it stood still.
     */
    static String disagreement(ClusterState local, ClusterState theirs) {
        DiscoveryNode self = local.nodes().getLocalNode();
        String manager = local.nodes().getClusterManagerNodeId();
        if (manager == null || !manager.equals(theirs.nodes().getClusterManagerNodeId())) {
            return "it follows cluster manager " + theirs.nodes().getClusterManagerNodeId() + ", this node " + manager;
        }
        DiscoveryNode member = theirs.nodes().get(self.getId());
        if (member == null || !member.getEphemeralId().equals(self.getEphemeralId())) {
            return "this node is not in its cluster state";
        }
        if (theirs.version() > local.version()) {
            return "its cluster state " + theirs.version() + " is newer than this node's " + local.version();
        }
        return null;
    }

    private void retry(long stall, String why) {
        if (stalls.get() != stall) {
            return;
        }
        unconfirmed = "this node stood still (a pause or a long GC) and " + why;
        threadPool.schedule(() -> confirm(stall), RETRY_AFTER, ThreadPool.Names.GENERIC);
    }
}
