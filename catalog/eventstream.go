package catalog

import (
	"math"
	"math/rand/v2"
	"slices"
)

// EventStream produces a deterministic, realistic stream of change events on
// top of the catalog that Generator(seed) makes for numShops shops, all at
// version 1 (the initial load). The mix, per event:
//
//   - ~85% hot shop fields: mostly delivery_minutes, also open, delivery_fee,
//     and rating with review_count;
//   - ~12% menu hot fields: price, sold_out, popular (a few cold ones);
//   - ~1% cold shop fields: min_order, delivery_radius_km, tags, phone, name;
//   - ~1% new menus and deleted menus;
//   - ~1% new shops (ids after numShops), re-created shops and shop deletes.
//
// Which shop changes is skewed: 80% of picks follow a Zipf law over a fixed
// permutation of the shops (popular shops change often, so a batch has
// repeats to coalesce), 20% are uniform. Every event's version is the
// aggregate's previous version + 1, so applying the stream in order to the
// generated states applies every event.
//
// Memory grows with the shops touched: a few words per shop, plus the menu
// prices of shops that got a menu event. An EventStream is not safe for
// concurrent use.
type EventStream struct {
	gen      *Generator
	r        *rand.Rand
	zipf     *rand.Zipf
	numShops int // initial catalog size
	created  int // shops created beyond numShops
	permMul  uint64
	permAdd  uint64
	shops    map[int]*streamShop // by shop index
	deleted  []int               // indexes of deleted shops
}

type streamShop struct {
	version         int64
	deleted         bool
	category        int
	open            bool
	deliveryMinutes int
	deliveryFee     int
	minOrder        int
	rating          float64
	reviewCount     int
	menusLoaded     bool
	menus           []streamMenu // live menus, when menusLoaded
	nextMenuK       int          // k of the next new menu
}

type streamMenu struct {
	k       int32
	price   int32
	soldOut bool
	popular bool
}

// NewEventStream returns the event stream for the catalog of numShops shops
// made by NewGenerator(seed). It panics if numShops < 1.
func NewEventStream(seed uint64, numShops int) *EventStream {
	if numShops < 1 {
		panic("catalog: NewEventStream needs numShops >= 1")
	}
	gen := NewGenerator(seed)
	r := gen.rng(0, streamEvents)
	s := &EventStream{
		gen:      gen,
		r:        r,
		zipf:     rand.NewZipf(r, 1.1, 50, uint64(numShops-1)),
		numShops: numShops,
		shops:    make(map[int]*streamShop),
	}
	// rank → shop index: i = (rank*permMul + permAdd) mod numShops, a
	// bijection because gcd(permMul, numShops) = 1.
	n := uint64(numShops)
	s.permMul = uint64(float64(n)*0.6180339887) | 1
	for gcd(s.permMul, n) != 1 {
		s.permMul += 2
	}
	s.permAdd = r.Uint64N(n)
	return s
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// NumShops returns how many shop ids exist so far (initial plus created);
// ids are 1..NumShops.
func (s *EventStream) NumShops() int { return s.numShops + s.created }

// Next returns the next event.
func (s *EventStream) Next() Event {
	x := s.r.Float64()
	switch {
	case x < 0.85:
		return s.hotShopEvent()
	case x < 0.97:
		return s.menuChangeEvent()
	case x < 0.98:
		return s.coldShopEvent()
	case x < 0.99:
		return s.menuCreateOrDeleteEvent()
	default:
		return s.shopCreateOrDeleteEvent()
	}
}

// NextHotShopUpdate returns the next event of the stream that is a hot
// update (IsHotShopUpdate) of a shop of the initial catalog, skipping the
// others: the load of a benchmark that applies only hot updates to a catalog
// loaded from the same seed. Skipped deletes only stop the stream from
// updating those shops; versions stay increasing per shop.
func (s *EventStream) NextHotShopUpdate() Event {
	for {
		ev := s.Next()
		if ev.IsHotShopUpdate() && ev.ID <= int64(s.numShops) {
			return ev
		}
	}
}

// pickShop picks a live shop index, popular shops more often.
func (s *EventStream) pickShop() (int, *streamShop) {
	for range 8 {
		var i int
		if s.r.Float64() < 0.8 {
			rank := s.zipf.Uint64()
			i = int((rank*s.permMul + s.permAdd) % uint64(s.numShops))
		} else {
			i = s.r.IntN(s.NumShops())
		}
		if st := s.state(i); !st.deleted {
			return i, st
		}
	}
	// Unlucky: many deleted shops around. Scan for a live one.
	for i := range s.NumShops() {
		if st := s.state(i); !st.deleted {
			return i, st
		}
	}
	panic("catalog: every shop is deleted")
}

// state returns the stream's view of shop i, created from the generator's
// profile on first touch (version 1, as the initial load).
func (s *EventStream) state(i int) *streamShop {
	if st, ok := s.shops[i]; ok {
		return st
	}
	p := s.gen.profile(i)
	st := &streamShop{
		version: 1, category: p.category, open: p.open, deliveryMinutes: p.deliveryMinutes,
		deliveryFee: p.deliveryFee, minOrder: p.minOrder, rating: p.rating,
		reviewCount: p.reviewCount, nextMenuK: p.menuCount,
	}
	s.shops[i] = st
	return st
}

func (st *streamShop) loadMenus(g *Generator, i int) {
	if st.menusLoaded {
		return
	}
	full := g.Shop(i)
	st.menus = make([]streamMenu, len(full.Menus))
	for k, m := range full.Menus {
		st.menus[k] = streamMenu{k: int32(k), price: int32(m.Price), soldOut: m.SoldOut, popular: m.Popular}
	}
	st.nextMenuK = len(full.Menus)
	st.menusLoaded = true
}

func (s *EventStream) hotShopEvent() Event {
	i, st := s.pickShop()
	f := &ShopFields{}
	x := s.r.Float64()
	switch {
	case x < 0.70:
		st.deliveryMinutes = s.walk(st.deliveryMinutes, 1+s.r.IntN(5), 15, 70)
		f.DeliveryMinutes = new(st.deliveryMinutes)
		if s.r.Float64() < 0.05 { // busy hour: fee goes up with the wait
			st.deliveryFee = s.walk(st.deliveryFee, 500, 0, 5000)
			f.DeliveryFee = new(st.deliveryFee)
		}
	case x < 0.82:
		st.open = !st.open
		f.Open = new(st.open)
	case x < 0.92:
		st.deliveryFee = s.walk(st.deliveryFee, 500*(1+s.r.IntN(2)), 0, 5000)
		f.DeliveryFee = new(st.deliveryFee)
	default:
		st.reviewCount += 1 + s.r.IntN(3)
		stars := 5 - float64(s.r.IntN(3))
		// Running mean with the new review, one decimal, 0..5.
		n := float64(st.reviewCount)
		st.rating = math.Max(0, math.Min(5, math.Round((st.rating*(n-1)+stars)/n*10)/10))
		f.ReviewCount = new(st.reviewCount)
		f.Rating = new(st.rating)
	}
	st.version++
	return ShopUpsertEvent(ShopID(i), st.version, f)
}

// walk moves v by ±step, kept in [lo, hi] and always different from v.
func (s *EventStream) walk(v, step, lo, hi int) int {
	if s.r.IntN(2) == 0 {
		step = -step
	}
	next := v + step
	if next < lo || next > hi {
		next = v - step
	}
	return clampInt(next, lo, hi)
}

func (s *EventStream) menuChangeEvent() Event {
	i, st := s.pickShop()
	st.loadMenus(s.gen, i)
	if len(st.menus) == 0 {
		return s.menuCreate(i, st)
	}
	m := &st.menus[s.r.IntN(len(st.menus))]
	f := &MenuFields{}
	x := s.r.Float64()
	switch {
	case x < 0.40:
		step := 500 * (1 + s.r.IntN(4))
		m.price = int32(s.walk(int(m.price), step, minPrice, maxPrice))
		f.Price = new(int(m.price))
	case x < 0.80:
		m.soldOut = !m.soldOut
		f.SoldOut = new(m.soldOut)
	case x < 0.95:
		m.popular = !m.popular
		f.Popular = new(m.popular)
	case x < 0.98:
		f.ExtraFee = new(500 * s.r.IntN(7))
	default:
		f.CookMinutes = new(5 + s.r.IntN(36))
	}
	st.version++
	shopID := ShopID(i)
	return MenuUpsertEvent(shopID, MenuID(shopID, int(m.k)), st.version, f)
}

func (s *EventStream) coldShopEvent() Event {
	i, st := s.pickShop()
	f := &ShopFields{}
	r := s.r
	x := r.Float64()
	switch {
	case x < 0.35:
		st.minOrder = s.walk(st.minOrder, 1000, 8000, 20000)
		f.MinOrder = new(st.minOrder)
	case x < 0.60:
		f.DeliveryRadiusKm = new(math.Round((1.5+3.5*r.Float64())*10) / 10)
	case x < 0.80:
		f.Tags = new(pickTags(r))
	case x < 0.90:
		f.Phone = new(phone(r))
	default:
		p := s.gen.profile(i)
		dist := &s.gen.districts[p.district]
		f.Name = new(s.gen.shopName(r, s.gen.categories[p.category].spec, dist, r.IntN(len(dist.dongs))))
	}
	st.version++
	return ShopUpsertEvent(ShopID(i), st.version, f)
}

func (s *EventStream) menuCreateOrDeleteEvent() Event {
	i, st := s.pickShop()
	st.loadMenus(s.gen, i)
	if s.r.Float64() < 0.6 || len(st.menus) <= MinMenusPerShop {
		return s.menuCreate(i, st)
	}
	j := s.r.IntN(len(st.menus))
	k := st.menus[j].k
	st.menus = slices.Delete(st.menus, j, j+1)
	st.version++
	shopID := ShopID(i)
	return MenuDeleteEvent(shopID, MenuID(shopID, int(k)), st.version)
}

// menuCreate adds a new menu with every field. When the shop's menu id
// space is used up it changes a price instead.
func (s *EventStream) menuCreate(i int, st *streamShop) Event {
	shopID := ShopID(i)
	if st.nextMenuK >= MenuIDsPerShop {
		if len(st.menus) > 0 {
			m := &st.menus[0]
			m.price = int32(jitterPrice(s.r, 10000))
			st.version++
			return MenuUpsertEvent(shopID, MenuID(shopID, int(m.k)), st.version, &MenuFields{Price: new(int(m.price))})
		}
		st.nextMenuK = 0 // no menus left: reuse ids from the start
	}
	k := st.nextMenuK
	st.nextMenuK++
	cat := &s.gen.categories[st.category]
	r := s.gen.rng(i, streamNewMenu^uint64(k)<<8)
	c := searchCumulative(cat.cumWeights, r.Float64()*cat.cumWeights[len(cat.cumWeights)-1])
	m := s.gen.menu(r, cat, c, shopID, k)
	st.menus = append(st.menus, streamMenu{k: int32(k), price: int32(m.Price), soldOut: m.SoldOut, popular: m.Popular})
	st.version++
	return MenuUpsertEvent(shopID, m.ID, st.version, MenuFieldsFrom(m))
}

func (s *EventStream) shopCreateOrDeleteEvent() Event {
	if s.r.Float64() < 0.4 && s.NumShops()-len(s.deleted) > 1 {
		i, st := s.pickShop()
		*st = streamShop{version: st.version + 1, deleted: true, category: st.category}
		s.deleted = append(s.deleted, i)
		return ShopDeleteEvent(ShopID(i), st.version)
	}
	var i int
	if len(s.deleted) > 0 && s.r.Float64() < 0.3 {
		j := s.r.IntN(len(s.deleted))
		i = s.deleted[j]
		s.deleted = slices.Delete(s.deleted, j, j+1)
	} else {
		i = s.numShops + s.created
		s.created++
	}
	full := s.gen.Shop(i)
	version := int64(1)
	if old, ok := s.shops[i]; ok {
		version = old.version + 1
	}
	delete(s.shops, i)
	st := s.state(i) // fresh view of the regenerated shop
	st.version = version
	full.Version = version
	return full.UpsertEvent()
}
