package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// Apply applies one event to the aggregate and reports whether it changed
// anything. An event whose version is not greater than s.Version is stale or
// a duplicate: Apply returns (false, nil) and leaves s untouched, so the state
// never becomes older. On error s is untouched too.
//
//   - shop upsert on an empty or deleted state creates the shop and needs
//     every shop field (ErrIncompleteShop); its menus are ev.Menus (none if nil).
//   - shop upsert on a live shop sets the given fields; non-nil ev.Menus
//     replaces the whole menu list.
//   - shop delete leaves a tombstone: Deleted, Version and Shop.ID; no menus.
//   - menu upsert updates the menu or, if the shop lacks it, adds it and then
//     needs every menu field (ErrIncompleteMenu).
//   - menu delete removes the menu; deleting a missing menu only advances the
//     version (deletes are idempotent).
//   - a menu event for a shop that does not exist is ErrShopNotFound.
//
// The event is validated first (ErrInvalidEvent); an event of another
// aggregate is ErrWrongShop. An empty state (Version 0, Shop.ID 0) adopts the
// event's aggregate id.
func (s *ShopState) Apply(ev Event) (applied bool, err error) {
	if err := ev.Validate(); err != nil {
		return false, err
	}
	shopID := ev.AggregateID()
	if s.Shop.ID != 0 && s.Shop.ID != shopID {
		return false, fmt.Errorf("%w: event for shop %d applied to shop %d", ErrWrongShop, shopID, s.Shop.ID)
	}
	if ev.Version <= s.Version {
		return false, nil
	}
	exists := s.Version > 0 && !s.Deleted
	switch {
	case ev.Type == EntityShop && ev.Op == OpDelete:
		*s = ShopState{Shop: Shop{ID: shopID}, Version: ev.Version, Deleted: true}
	case ev.Type == EntityShop:
		if !exists {
			if missing := ev.Shop.Missing(); len(missing) > 0 {
				return false, fmt.Errorf("%w: shop %d version %d lacks %s", ErrIncompleteShop, shopID, ev.Version, strings.Join(missing, ", "))
			}
			*s = ShopState{Shop: Shop{ID: shopID}, Menus: []Menu{}}
		}
		ev.Shop.ApplyTo(&s.Shop)
		if ev.Menus != nil {
			s.Menus = sortedMenus(ev.Menus)
		}
	case !exists:
		return false, fmt.Errorf("%w: menu %d event version %d for shop %d", ErrShopNotFound, ev.ID, ev.Version, shopID)
	case ev.Op == OpDelete:
		if i, found := s.menuIndex(ev.ID); found {
			s.Menus = slices.Delete(s.Menus, i, i+1)
		}
	default:
		i, found := s.menuIndex(ev.ID)
		if !found {
			if missing := ev.Menu.Missing(); len(missing) > 0 {
				return false, fmt.Errorf("%w: menu %d of shop %d version %d lacks %s", ErrIncompleteMenu, ev.ID, shopID, ev.Version, strings.Join(missing, ", "))
			}
			s.Menus = slices.Insert(s.Menus, i, Menu{ID: ev.ID, ShopID: shopID})
		}
		ev.Menu.ApplyTo(&s.Menus[i])
	}
	s.Version = ev.Version
	return true, nil
}

func sortedMenus(menus []Menu) []Menu {
	out := slices.Clone(menus)
	if out == nil {
		out = []Menu{}
	}
	slices.SortFunc(out, func(a, b Menu) int { return cmpInt64(a.ID, b.ID) })
	return out
}
