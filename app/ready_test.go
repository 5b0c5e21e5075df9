package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/layout"
)

// waitReady polls /readyz until it answers 200 (the layouts' indices are
// created in the background) and checks that it reports every layout's
// indices with their health and replica counts.
func waitReady(t *testing.T, addr string, kinds []layout.Kind, wantReplicas int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Status  string          `json:"status"`
			Layouts []layout.Health `json:"layouts"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			if body.Status != "ready" || len(body.Layouts) != len(kinds) {
				t.Fatalf("/readyz 200 with %+v, want ready and %d layouts", body, len(kinds))
			}
			// Ready (every primary active); wait for the replicas too.
			var notYet []string
			for i, h := range body.Layouts {
				if h.Health == "disabled" && h.Error != "" {
					continue // a layout this cluster cannot run (hot without its plugin), saying why
				}
				if h.Layout != kinds[i] || len(h.Indices) == 0 {
					t.Fatalf("/readyz layout %d: %+v, want %s with its indices", i, h, kinds[i])
				}
				for _, ix := range h.Indices {
					if ix.Health != "green" || ix.Replicas != wantReplicas || ix.ReplicaSetting != layout.DefaultReplicas || ix.Index == "" {
						notYet = append(notYet, fmt.Sprintf("%s: %+v, want green with %d replicas (setting %s)", h.Layout, ix, wantReplicas, layout.DefaultReplicas))
					}
				}
			}
			if len(notYet) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz after 60 s: %v", notYet)
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("/readyz: %d (Retry-After %q), want 200 or 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still 503 after 60 s: %+v", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkUnavailable sends a request that needs a backend that is down and
// wants a 503 problem with Retry-After naming it.
func checkUnavailable(t *testing.T, addr, method, path, body, what string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct {
		Status      int    `json:"status"`
		Detail      string `json:"detail"`
		Unavailable string `json:"unavailable"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatalf("%s %s: not a problem body: %v", method, path, err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || p.Unavailable != what || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s %s with %s down: %d %+v (Retry-After %q), want 503 problem naming %s with Retry-After",
			method, path, what, resp.StatusCode, p, resp.Header.Get("Retry-After"), what)
	}
}
