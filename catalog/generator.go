package catalog

import (
	"iter"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Generator produces a deterministic, realistic Seoul catalog. Shop i (id
// i+1) depends only on (seed, i): the same seed gives byte-identical shops,
// any shop can be regenerated alone, and a Generator is safe for concurrent
// use (it only reads its precomputed tables).
type Generator struct {
	seed        uint64
	categories  []categoryTable
	categoryCum []float64 // cumulative category shares
	districts   []districtTable
	districtCum []float64 // cumulative district shares
}

type categoryTable struct {
	spec       *categorySpec
	candidates []menuCandidate
	cumWeights []float64
}

type menuCandidate struct {
	name  string
	price int
	drink bool
}

type districtTable struct {
	name     string
	center   GeoPoint
	dongs    []string
	branches []string // "역삼점" for 역삼동
	stems    []string // "역삼" for 역삼동
}

// Sizes of the generated catalog.
const (
	MinMenusPerShop   = 3
	MaxGeneratedMenus = 150
	minPrice          = 2000
	maxPrice          = 45000
)

// Variants that big shops add to items they already sell (not to drinks).
var menuVariants = [...]part{
	{" 세트", 3000, 0.012}, {" 곱빼기", 1000, 0.008}, {" 2인분", 0, 0.006}, {" (대)", 4000, 0.006},
}

// NewGenerator precomputes the word tables for a seed.
func NewGenerator(seed uint64) *Generator {
	g := &Generator{seed: seed}
	total := 0.0
	for i := range categorySpecs {
		spec := &categorySpecs[i]
		g.categories = append(g.categories, buildCategoryTable(spec))
		total += spec.share
		g.categoryCum = append(g.categoryCum, total)
	}
	total = 0
	for _, d := range seoulDistricts {
		t := districtTable{name: d.name, center: d.center, dongs: d.dongs}
		for _, dong := range d.dongs {
			stem := dong
			if utf8.RuneCountInString(dong) > 2 {
				stem = strings.TrimSuffix(dong, "동")
			}
			t.stems = append(t.stems, stem)
			t.branches = append(t.branches, stem+"점")
		}
		g.districts = append(g.districts, t)
		total += d.share
		g.districtCum = append(g.districtCum, total)
	}
	return g
}

func buildCategoryTable(spec *categorySpec) categoryTable {
	t := categoryTable{spec: spec}
	seen := map[string]bool{}
	add := func(name string, price int, weight float64, drink bool) {
		if seen[name] || weight <= 0 {
			return
		}
		seen[name] = true
		t.candidates = append(t.candidates, menuCandidate{name: name, price: price, drink: drink})
		prev := 0.0
		if n := len(t.cumWeights); n > 0 {
			prev = t.cumWeights[n-1]
		}
		t.cumWeights = append(t.cumWeights, prev+weight)
	}
	none := []part{{"", 0, 1}}
	orNone := func(parts []part) []part {
		if len(parts) == 0 {
			return none
		}
		return parts
	}
	var mains []menuCandidate
	var mainWeights []float64
	for _, fam := range spec.families {
		for _, pre := range orNone(fam.prefixes) {
			for _, base := range fam.bases {
				for _, suf := range orNone(fam.suffixes) {
					name := pre.text + base.text + suf.text
					price := base.price + pre.price + suf.price
					weight := pre.weight * base.weight * suf.weight
					if !seen[name] {
						mains = append(mains, menuCandidate{name: name, price: price})
						mainWeights = append(mainWeights, weight)
					}
					add(name, price, weight, false)
				}
			}
		}
	}
	for _, d := range drinkFamily.bases {
		add(d.text, d.price, d.weight*0.5, true)
	}
	for i, m := range mains {
		for _, v := range menuVariants {
			add(m.name+v.text, m.price+v.price, mainWeights[i]*v.weight, false)
		}
	}
	if len(t.candidates) > maxCandidates {
		panic("catalog: category " + spec.name + " has too many menu candidates")
	}
	return t
}

const maxCandidates = 64 * 32 // bits in the sampling bitset

// splitMix64 scrambles a 64-bit value (Steele et al.); used to derive
// independent PCG seeds from (seed, shop index, purpose).
func splitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Purposes of per-shop random streams, so that one can change without
// shifting the others.
const (
	streamProfile uint64 = iota + 1
	streamDetails
	streamNewMenu
	streamEvents
)

func (g *Generator) rng(i int, purpose uint64) *rand.Rand {
	return rand.New(rand.NewPCG(splitMix64(g.seed^splitMix64(purpose)), splitMix64(uint64(i)^(purpose<<56))))
}

// ShopID returns the id of generated shop i: i+1.
func ShopID(i int) int64 { return int64(i) + 1 }

// ShopIndex returns the generator index of a shop id: id-1.
func ShopIndex(id int64) int { return int(id - 1) }

// shopProfile holds the values a stream needs without generating menus.
type shopProfile struct {
	category        int
	district        int
	open            bool
	deliveryMinutes int
	deliveryFee     int
	minOrder        int
	rating          float64
	reviewCount     int
	radiusKm        float64
	menuCount       int
}

var deliveryFeeWeights = [...]float64{ // index × 500 KRW, 0..5000
	0.12, 0.05, 0.10, 0.08, 0.15, 0.12, 0.15, 0.08, 0.08, 0.03, 0.04,
}

var minOrderWeights = [...]float64{ // 8000 + index × 1000, ..20000
	0.05, 0.03, 0.08, 0.05, 0.20, 0.05, 0.15, 0.20, 0.05, 0.04, 0.05, 0.02, 0.03,
}

func (g *Generator) profile(i int) shopProfile {
	r := g.rng(i, streamProfile)
	var p shopProfile
	p.category = pickCumulative(r, g.categoryCum)
	p.district = pickCumulative(r, g.districtCum)
	p.open = r.Float64() < 0.9
	p.deliveryMinutes = clampInt(int(math.Round(34+9*r.NormFloat64())), 15, 70)
	p.deliveryFee = 500 * pickWeighted(r, deliveryFeeWeights[:])
	p.minOrder = 8000 + 1000*pickWeighted(r, minOrderWeights[:])
	p.rating = math.Max(3, math.Round((5-math.Abs(0.35*r.NormFloat64()))*10)/10)
	if r.Float64() >= 0.03 {
		// Power law (Pareto, x_m = 20, alpha = 1.05), capped.
		p.reviewCount = min(int(20*math.Pow(1-r.Float64(), -1/1.05))-19, 100_000)
	}
	p.radiusKm = math.Round((1.5+3.5*math.Pow(r.Float64(), 1.3))*10) / 10
	// Lognormal menu count: mean exp(mu + sigma²/2) ≈ 30.
	const sigma = 0.6
	mu := math.Log(30) - sigma*sigma/2
	p.menuCount = clampInt(int(math.Round(math.Exp(mu+sigma*r.NormFloat64()))), MinMenusPerShop, MaxGeneratedMenus)
	p.menuCount = min(p.menuCount, len(g.categories[p.category].candidates)*3/4)
	return p
}

// Shop generates shop i (id i+1) at version 1 with its menus, ids
// MenuID(id, 0..n-1). It panics for a negative i.
func (g *Generator) Shop(i int) ShopState {
	if i < 0 {
		panic("catalog: negative shop index " + strconv.Itoa(i))
	}
	p := g.profile(i)
	r := g.rng(i, streamDetails)
	cat := &g.categories[p.category]
	dist := &g.districts[p.district]
	id := ShopID(i)
	shop := Shop{
		ID:               id,
		Category:         cat.spec.name,
		DeliveryRadiusKm: p.radiusKm,
		Open:             p.open,
		DeliveryMinutes:  p.deliveryMinutes,
		DeliveryFee:      p.deliveryFee,
		MinOrder:         p.minOrder,
		Rating:           p.rating,
		ReviewCount:      p.reviewCount,
		District:         dist.name,
	}
	dong := r.IntN(len(dist.dongs))
	shop.Name = g.shopName(r, cat.spec, dist, dong)
	shop.Location = seoulPoint(r, dist.center)
	shop.Address = address(r, dist.name, dist.dongs[dong])
	shop.Phone = phone(r)
	shop.Tags = pickTags(r)
	shop.OpenedOn = time.Date(2008, 1, 1+r.IntN(18*365), 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	menus := make([]Menu, p.menuCount)
	var used [maxCandidates / 64]uint64
	for k := range menus {
		c := cat.drawUnused(r, &used)
		menus[k] = g.menu(r, cat, c, id, k)
	}
	return ShopState{Shop: shop, Menus: menus, Version: 1}
}

// Shops yields generated shops 0..n-1 in order, one at a time.
func (g *Generator) Shops(n int) iter.Seq2[int, ShopState] {
	return func(yield func(int, ShopState) bool) {
		for i := range n {
			if !yield(i, g.Shop(i)) {
				return
			}
		}
	}
}

// GenerateShops returns shops 0..n-1 of the catalog for seed, in memory; use
// Generator.Shops or Generator.Shop for big catalogs.
func GenerateShops(seed uint64, n int) []ShopState {
	g := NewGenerator(seed)
	out := make([]ShopState, 0, n)
	for _, s := range g.Shops(n) {
		out = append(out, s)
	}
	return out
}

func (g *Generator) shopName(r *rand.Rand, spec *categorySpec, dist *districtTable, dong int) string {
	if len(spec.brands) > 0 && r.Float64() < 0.4 {
		return spec.brands[r.IntN(len(spec.brands))] + " " + dist.branches[dong]
	}
	core := spec.nameCores[r.IntN(len(spec.nameCores))]
	if r.Float64() < 0.25 {
		return dist.stems[dong] + core
	}
	return shopNamePrefixes[r.IntN(len(shopNamePrefixes))] + core
}

// drawUnused draws a candidate by weight, skipping those in used (weighted
// sampling without replacement by rejection), and marks it used.
func (t *categoryTable) drawUnused(r *rand.Rand, used *[maxCandidates / 64]uint64) int {
	total := t.cumWeights[len(t.cumWeights)-1]
	for range 64 {
		c := searchCumulative(t.cumWeights, r.Float64()*total)
		if used[c/64]&(1<<(c%64)) == 0 {
			used[c/64] |= 1 << (c % 64)
			return c
		}
	}
	// Heavy candidates are used up: take the first unused after a random start.
	start := r.IntN(len(t.candidates))
	for j := range len(t.candidates) {
		c := (start + j) % len(t.candidates)
		if used[c/64]&(1<<(c%64)) == 0 {
			used[c/64] |= 1 << (c % 64)
			return c
		}
	}
	panic("catalog: no unused menu candidate") // profile caps menus at 3/4 of the candidates
}

func (g *Generator) menu(r *rand.Rand, cat *categoryTable, c int, shopID int64, k int) Menu {
	cand := &cat.candidates[c]
	m := Menu{
		ID:     MenuID(shopID, k),
		ShopID: shopID,
		Name:   cand.name,
		Price:  jitterPrice(r, cand.price),
	}
	if r.Float64() < 0.12 {
		m.ExtraFee = 500 * (1 + r.IntN(6))
	}
	if cand.drink {
		m.CookMinutes = 5
	} else {
		m.CookMinutes = clampInt(cat.spec.cookMinutes+r.IntN(11)-5, 5, 40)
	}
	popularChance := 0.06
	if k < 5 {
		popularChance = 0.45
	}
	m.Popular = r.Float64() < popularChance
	m.SoldOut = r.Float64() < 0.03
	if !cand.drink && r.Float64() < 0.9 {
		m.Description = description(r, cand.name)
	}
	return m
}

func description(r *rand.Rand, name string) string {
	adj := descriptionAdjectives[r.IntN(len(descriptionAdjectives))]
	tail := descriptionTails[r.IntN(len(descriptionTails))]
	var b strings.Builder
	b.Grow(len(adj) + len(name) + len(tail) + 3)
	b.WriteString(adj)
	b.WriteByte(' ')
	b.WriteString(name)
	b.WriteString(", ")
	b.WriteString(tail)
	return b.String()
}

// jitterPrice varies a typical price by about ±8% and rounds it to 500 KRW
// below 10,000 and to 1,000 above.
func jitterPrice(r *rand.Rand, typical int) int {
	p := float64(typical) * (1 + 0.08*r.NormFloat64())
	step := 1000.0
	if p < 10000 {
		step = 500
	}
	return clampInt(int(math.Round(p/step)*step), minPrice, maxPrice)
}

const kmPerDegreeLat = 111.32

// seoulPoint draws a point around a district center: normal, sigma 0.9 km
// per axis, so about 3 in 4 shops are within 1.5 km; kept inside Seoul.
func seoulPoint(r *rand.Rand, center GeoPoint) GeoPoint {
	const sigmaKm = 0.9
	kmPerDegreeLon := kmPerDegreeLat * math.Cos(center.Lat*math.Pi/180)
	for range 10 {
		lat := center.Lat + sigmaKm*r.NormFloat64()/kmPerDegreeLat
		lon := center.Lon + sigmaKm*r.NormFloat64()/kmPerDegreeLon
		if lat >= seoulMinLat && lat <= seoulMaxLat && lon >= seoulMinLon && lon <= seoulMaxLon {
			return GeoPoint{Lat: round6(lat), Lon: round6(lon)}
		}
	}
	return center
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func address(r *rand.Rand, district, dong string) string {
	buf := make([]byte, 0, 64)
	buf = append(buf, "서울특별시 "...)
	buf = append(buf, district...)
	buf = append(buf, ' ')
	buf = append(buf, dong...)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, int64(1+r.IntN(999)), 10)
	if r.Float64() < 0.6 {
		buf = append(buf, '-')
		buf = strconv.AppendInt(buf, int64(1+r.IntN(60)), 10)
	}
	return string(buf)
}

func phone(r *rand.Rand) string {
	buf := make([]byte, 0, 16)
	if r.Float64() < 0.4 {
		buf = append(buf, "0507-"...)
		buf = appendDigits(buf, r, 4)
	} else {
		buf = append(buf, "02-"...)
		buf = append(buf, byte('2'+r.IntN(8))) // Seoul numbers do not start with 0 or 1
		buf = appendDigits(buf, r, 2+r.IntN(2))
	}
	buf = append(buf, '-')
	buf = appendDigits(buf, r, 4)
	return string(buf)
}

func appendDigits(buf []byte, r *rand.Rand, n int) []byte {
	for range n {
		buf = append(buf, byte('0'+r.IntN(10)))
	}
	return buf
}

func pickTags(r *rand.Rand) []string {
	n := pickWeighted(r, []float64{0.25, 0.3, 0.25, 0.12, 0.08})
	tags := make([]string, 0, n)
	for len(tags) < n {
		tag := shopTags[r.IntN(len(shopTags))]
		dup := false
		for _, t := range tags {
			dup = dup || t == tag
		}
		if !dup {
			tags = append(tags, tag)
		}
	}
	return tags
}

// pickWeighted returns an index with probability proportional to weights.
func pickWeighted(r *rand.Rand, weights []float64) int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := r.Float64() * total
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

func pickCumulative(r *rand.Rand, cum []float64) int {
	return searchCumulative(cum, r.Float64()*cum[len(cum)-1])
}

// searchCumulative returns the first index whose cumulative weight exceeds x.
func searchCumulative(cum []float64, x float64) int {
	lo, hi := 0, len(cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if cum[mid] > x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }
