package clusterbench

import (
	"strings"
	"testing"
)

// TestBalance checks the ratios from two snapshots and the empty baseline,
// and that a master without work or data is an error, not a ratio.
func TestBalance(t *testing.T) {
	c := &Cluster{empty: map[string]Node{"a": {UsedMemory: 1000, DatasetMemory: 100}, "b": {UsedMemory: 2000, DatasetMemory: 200}, "c": {UsedMemory: 1500, DatasetMemory: 150}}}
	before := map[string]Node{"a": {Commands: 10}, "b": {Commands: 20}, "c": {Commands: 30}}
	// b's used_memory holds 400 B of client buffers beside its data.
	after := map[string]Node{
		"a": {Commands: 110, UsedMemory: 1300, DatasetMemory: 400},
		"b": {Commands: 140, UsedMemory: 2760, DatasetMemory: 560},
		"c": {Commands: 130, UsedMemory: 1800, DatasetMemory: 450},
	}
	b, err := c.Balance(before, after)
	if err != nil {
		t.Fatal(err)
	}
	// Ops 100, 120, 100; dataset above empty 300, 360, 300; used_memory
	// above empty 300, 760, 300.
	if b.Masters != 3 || b.OpsShareMaxOverMin != 1.2 || b.MemoryShareMaxOverMin != 1.2 || b.UsedMemoryShareMaxOverMin != 2.5333 {
		t.Fatalf("balance %+v: want 3 masters, ops and dataset ratios 1.2, used_memory ratio 2.5333", b)
	}
	if b.MemoryByMaster["b"] != 360 || b.UsedMemoryByMaster["b"] != 760 || b.OpsByMaster["b"] != 120 {
		t.Fatalf("master b: %d ops, %d B dataset, %d B used; want 120, 360 and 760", b.OpsByMaster["b"], b.MemoryByMaster["b"], b.UsedMemoryByMaster["b"])
	}
	after["c"] = Node{Commands: 30, UsedMemory: 1800, DatasetMemory: 450}
	if _, err := c.Balance(before, after); err == nil || !strings.Contains(err.Error(), "smallest is 0") {
		t.Fatalf("a master without commands: err %v, want one naming the smallest 0", err)
	}
	delete(before, "a")
	if _, err := c.Balance(before, after); err == nil || !strings.Contains(err.Error(), "master a") {
		t.Fatalf("a master missing from the first snapshot: err %v, want one naming it", err)
	}
}

func TestInfoInt(t *testing.T) {
	got, err := infoInt("# Stats\r\ntotal_commands_processed:42\r\n# Memory\r\nused_memory:1234\r\n", "used_memory")
	if err != nil || got != 1234 {
		t.Fatalf("infoInt = %d, %v; want 1234", got, err)
	}
	if _, err := infoInt("# Stats\r\n", "used_memory"); err == nil {
		t.Fatal("no used_memory line: want an error")
	}
}
