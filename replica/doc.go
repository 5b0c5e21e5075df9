// Package replica ranks the copies of a replicated read path (Redis read
// replicas, OpenSearch endpoints) so that each read goes to the copy that will
// answer fastest. Its main policy is C3 adaptive replica selection (Suresh et
// al., NSDI 2015, as Elasticsearch applies it). The peers it is measured
// against sit behind the same Policy interface so they can be compared in one
// run: round-robin, seeded random, lowest-ping (Lettuce LOWEST_LATENCY,
// go-redis RouteByLatency) with and without go-redis's latency tolerance,
// power of two choices over peak-EWMA latency × (in-flight+1) (Finagle,
// Linkerd, Envoy peak_ewma) and least outstanding requests (Envoy
// LEAST_REQUEST). Hedge sends a read that is late on a silent replica a
// second time to the next-best one, within a budget (Hedger).
//
// The package is pure: it opens no connections and policies read time only
// through the clock in Config, so every decision can be replayed in a table
// test; Hedge waits on timers of package time and is tested in
// testing/synctest. A
// wrapper (go-redis, HTTP) uses a Policy like this:
//
//	order := policy.Select(buf[:0]) // best first; order[0] is already started
//	for i, r := range order {
//		if i > 0 {
//			policy.Start(r) // retry on the next-best replica
//		}
//		t0 := time.Now()
//		err := call(r)
//		policy.Done(r, replica.Result{Latency: time.Since(t0), Failed: err != nil})
//		if err == nil {
//			break
//		}
//	}
//
// Main invariant: every request counted as started on a replica (by Select,
// Pick or Start) is ended by exactly one Done, so a replica's outstanding count
// is the number of this client's requests in flight to it; and Select always
// returns every replica exactly once, so a caller can fall through the whole
// list when replicas fail.
package replica
