package catalog

import (
	"math/rand/v2"
	"slices"
)

// Disorder returns events as an at-least-once transport that does not keep
// order could deliver them, drawn deterministically from seed:
//
//   - about reorderRate of the events trade places with a later event of the
//     same shop at most window positions on, so the newer one (a menu event
//     before an older shop event, say) arrives first and the older is stale;
//   - about duplicateRate of the events arrive a second time, up to window
//     positions later.
//
// Every event is delivered at least once. Differential tests use it to check
// that every layout applies the same set of events whatever the delivery.
func Disorder(events []Event, seed uint64, reorderRate, duplicateRate float64, window int) []Event {
	r := rand.New(rand.NewPCG(seed, 0xd150d3e5))
	out := slices.Clone(events)
	for i := range out {
		if r.Float64() >= reorderRate {
			continue
		}
		for j := i + 1; j < len(out) && j <= i+window; j++ {
			if out[j].AggregateID() == out[i].AggregateID() {
				out[i], out[j] = out[j], out[i]
				break
			}
		}
	}
	type copyDue struct {
		at int // position in out after which the copy is delivered
		ev Event
	}
	var due []copyDue
	delivered := make([]Event, 0, len(out)+int(float64(len(out))*duplicateRate)+1)
	for i, ev := range out {
		delivered = append(delivered, ev)
		if r.Float64() < duplicateRate {
			due = append(due, copyDue{i + r.IntN(window+1), ev})
		}
		due = slices.DeleteFunc(due, func(c copyDue) bool {
			if c.at > i {
				return false
			}
			delivered = append(delivered, c.ev)
			return true
		})
	}
	for _, c := range due {
		delivered = append(delivered, c.ev)
	}
	return delivered
}
