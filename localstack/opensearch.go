package localstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// openSearchNode is one node of the local cluster.
type openSearchNode struct {
	name          string
	httpPort      int
	transportPort int
}

// clusterName is unique per state directory, so two stacks never join
// each other's cluster.
func clusterName(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return "baedal-" + hex.EncodeToString(sum[:4])
}

// startOpenSearchNode starts one node of the cluster with the launcher
// (without the baedal-hot plugin when withoutHot), with the extra settings.
func startOpenSearchNode(stateDir, jdkHome, launcherDir, heap string, node openSearchNode, all []openSearchNode, withoutHot bool, settings []string) (Process, error) {
	home := filepath.Join(stateDir, "opensearch", node.name)
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		return Process{}, err
	}
	args := []string{
		"-Xms" + heap, "-Xmx" + heap,
		"--enable-native-access=ALL-UNNAMED",
		"-cp", filepath.Join(launcherDir, launcherJar) + ":" + filepath.Join(launcherDir, "target", "lib", "*"),
		"dev.baedal.opensearch.Launcher",
		"--node-name", node.name,
		"--cluster-name", clusterName(stateDir),
		"--http-port", strconv.Itoa(node.httpPort),
		"--transport-port", strconv.Itoa(node.transportPort),
		"--home", home,
		"--data-path", filepath.Join(home, "data"),
		// baedal creates every index it writes, behind an alias; a write to a
		// missing alias must fail rather than create an index with dynamic
		// mappings in the alias's place.
		"--setting", "action.auto_create_index=false",
	}
	if withoutHot {
		args = append(args, "--without-plugin", "baedal-hot")
	}
	for _, kv := range settings {
		args = append(args, "--setting", kv)
	}
	if len(all) > 1 {
		var seeds, names []string
		for _, n := range all {
			seeds = append(seeds, "127.0.0.1:"+strconv.Itoa(n.transportPort))
			names = append(names, n.name)
		}
		args = append(args, "--seed-hosts", strings.Join(seeds, ","), "--initial-cluster-managers", strings.Join(names, ","))
	}
	cmd := exec.Command(filepath.Join(jdkHome, "bin", "java"), args...)
	return startProcess(node.name, cmd, filepath.Join(stateDir, "logs", node.name+".log"))
}

// waitOpenSearch waits until probeOpenSearch passes.
func waitOpenSearch(ctx context.Context, p Process, url string, nodes int) error {
	return waitFor(ctx, p, func(ctx context.Context) error { return probeOpenSearch(ctx, url, nodes) })
}

// probeOpenSearch checks that the cluster has every node and is yellow (one
// node) or green (several nodes), waiting up to 2 s inside OpenSearch.
func probeOpenSearch(ctx context.Context, url string, nodes int) error {
	status := "yellow"
	if nodes > 1 {
		status = "green"
	}
	return probeOpenSearchHealth(ctx, fmt.Sprintf("%s/_cluster/health?wait_for_status=%s&wait_for_nodes=%d&timeout=2s", url, status, nodes), nodes)
}

// probeOpenSearchNodes checks that the node at url answers and the cluster
// has every node, whatever its status.
func probeOpenSearchNodes(ctx context.Context, url string, nodes int) error {
	return probeOpenSearchHealth(ctx, fmt.Sprintf("%s/_cluster/health?wait_for_nodes=%d&timeout=2s", url, nodes), nodes)
}

func probeOpenSearchHealth(ctx context.Context, healthURL string, nodes int) error {
	client := &http.Client{Timeout: 10 * time.Second}
	{
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthURL, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var health struct {
			Status   string `json:"status"`
			Nodes    int    `json:"number_of_nodes"`
			TimedOut bool   `json:"timed_out"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
			return fmt.Errorf("decode cluster health: %w", err)
		}
		if health.TimedOut || health.Nodes < nodes {
			return fmt.Errorf("cluster is %s with %d of %d nodes", health.Status, health.Nodes, nodes)
		}
		return nil
	}
}
