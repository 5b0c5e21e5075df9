package catalog

import "strconv"

// ChurnShops returns the upserts (version 1) of n generated shops numbered
// firstID, firstID+1, … (menus MenuID(id, k)), and the churn a live load
// applies to them afterwards: every shop deleted (version 2), every other
// one re-created with a new name (version 3), every fourth deleted again
// (version 4). Live reindex applies the churn while a copy runs, whose
// snapshot holds version 1 of every one of them: a deleted shop copied back
// into the target, or a re-created one at an older state, shows at once.
func ChurnShops(seed uint64, firstID int64, n int) (creates, churn []Event) {
	for i, st := range NewGenerator(seed).Shops(n) {
		id := firstID + int64(i)
		st.Shop.ID, st.Version = id, 1
		for m := range st.Menus {
			st.Menus[m].ShopID, st.Menus[m].ID = id, MenuID(id, m)
		}
		c := st.UpsertEvent()
		creates = append(creates, c)
		churn = append(churn, ShopDeleteEvent(id, 2))
		if i%2 == 0 {
			fields := *c.Shop
			name := "re-created " + strconv.Itoa(i)
			fields.Name = &name
			re := c
			re.Shop, re.Version = &fields, 3
			churn = append(churn, re)
		}
		if i%4 == 0 {
			churn = append(churn, ShopDeleteEvent(id, 4))
		}
	}
	return creates, churn
}
