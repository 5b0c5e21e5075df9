package catalog

import (
	"strings"
	"testing"
)

// TestChurnShopsEndStates applies the creates and the churn in order and
// checks each shop's end: re-created (every other, not every fourth) with
// its new name at version 3, else deleted; every event valid for its state.
func TestChurnShopsEndStates(t *testing.T) {
	const first, n = 900_001, 9
	creates, churn := ChurnShops(3, first, n)
	if len(creates) != n {
		t.Fatalf("%d creates, want %d", len(creates), n)
	}
	states := map[int64]*ShopState{}
	for _, ev := range append(creates, churn...) {
		st := states[ev.ID]
		if st == nil {
			st = new(ShopState)
			states[ev.ID] = st
		}
		if _, err := st.Apply(ev); err != nil {
			t.Fatalf("event %+v: %v", ev, err)
		}
	}
	for i := range n {
		st := states[first+int64(i)]
		recreated := i%2 == 0 && i%4 != 0
		switch {
		case st == nil:
			t.Errorf("shop %d: no state", first+i)
		case recreated && (st.Deleted || st.Version != 3 || !strings.HasPrefix(st.Shop.Name, "re-created ") || len(st.Menus) == 0):
			t.Errorf("shop %d: %+v, want re-created at version 3 with its menus", first+i, st)
		case !recreated && !st.Deleted:
			t.Errorf("shop %d: version %d, want deleted", first+i, st.Version)
		}
		for _, m := range st.Menus {
			if m.ShopID != first+int64(i) || m.ID/MenuIDsPerShop != first+int64(i) {
				t.Errorf("shop %d: menu %d of shop %d", first+i, m.ID, m.ShopID)
			}
		}
	}
}
