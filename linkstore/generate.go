package linkstore

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"strconv"
	"time"
)

// Generator produces deterministic, realistic click records: Korean
// delivery-app ad clicks with real-looking iOS/Android user agents, baedal://
// deep links, UTM parameters and tracking links. Strings repeat across
// records the way real traffic does (a few channels, a few dozen campaigns,
// a few device models), while ids, UUIDs, IPs and timestamps vary per record.
// A record's JSON form is ~1 KB. The same seed always yields the same
// sequence. A Generator is not safe for concurrent use.
type Generator struct {
	rng       *rand.Rand
	clock     time.Time
	campaigns []generatedCampaign
}

type generatedCampaign struct {
	campaign NamedID
	slug     string
	channel  generatedChannel
	adGroups []NamedID
	creative []NamedID
	category string
	event    string
}

type generatedChannel struct {
	id     uint64
	name   string
	source string
	medium string
	app    string // in-app browser token added to user agents
}

var generatorChannels = []generatedChannel{
	{1, "카카오모먼트", "kakao", "display", "KAKAOTALK 25.2.1"},
	{2, "네이버 성과형 디스플레이(GFA)", "naver", "display", "NAVER(inapp; search; 2000; 12.10.3)"},
	{3, "Meta Ads", "meta", "social", "Instagram 370.0.0.28.96"},
	{4, "Google Ads (App campaigns)", "google", "cpc", ""},
	{5, "토스애즈", "toss", "display", "TossApp/5.198.0"},
	{6, "TikTok For Business", "tiktok", "video", "musical_ly_2023805030 JsSdk/2.0"},
	{7, "당근 비즈프로필 광고", "daangn", "display", "DaangnApp/24.50.0"},
	{8, "YouTube 인스트림", "youtube", "video", ""},
}

var (
	generatorEvents     = []string{"어린이날", "가정의달", "주말특가", "첫주문쿠폰", "배달팁무료", "점심특가", "야식타임", "비오는날", "월급날", "신규가입"}
	generatorEventSlugs = []string{"childrensday", "familymonth", "weekend", "firstorder", "freedelivery", "lunch", "latenight", "rainyday", "payday", "signup"}
	generatorCategories = []string{"치킨", "피자", "족발·보쌈", "중식", "분식", "카페·디저트", "한식", "돈까스·회·일식", "버거", "찜·탕·찌개", "아시안", "도시락"}
	generatorCatSlugs   = []string{"chicken", "pizza", "jokbal", "chinese", "bunsik", "cafe", "korean", "japanese", "burger", "stew", "asian", "dosirak"}
	generatorTargets    = []string{"신규", "재방문", "휴면", "전체"}
	generatorRegions    = []string{"서울_강남구", "서울_마포구", "서울_송파구", "서울_관악구", "경기_성남시", "경기_수원시", "부산_해운대구", "인천_연수구", "대구_수성구", "대전_유성구"}
	generatorAges       = []string{"18-24", "25-34", "35-44", "45-54"}
	generatorGenders    = []string{"남성", "여성", "전체"}
	generatorFormats    = []string{"배너_1080x1080", "배너_1200x628", "동영상_15초", "동영상_6초", "네이티브_피드", "캐러셀_3장"}
	generatorShops      = []string{"교촌치킨", "BHC", "BBQ", "굽네치킨", "도미노피자", "피자헛", "원할머니보쌈", "홍콩반점0410", "신전떡볶이", "메가MGC커피", "본죽&비빔밥", "맘스터치", "롯데리아", "역전우동", "한솥도시락", "미쳐버린파닭"}
	generatorBranches   = []string{"강남역점", "역삼점", "홍대입구점", "잠실새내점", "신림점", "서현점", "광교점", "해운대점", "송도점", "범어점", "충남대점", "건대점"}
	generatorKeywords   = []string{"치킨 배달", "피자 할인", "야식 추천", "떡볶이 맛집", "족발 배달", "배달 쿠폰", "점심 메뉴", "마라탕", "커피 배달", ""}
	generatorPlacements = []string{"feed", "story", "reels", "search_top", "home_banner", "chat_list", "instream"}
)

type generatedIOSModel struct {
	model         string
	width, height uint32
}

var generatorIOSModels = []generatedIOSModel{
	{"iPhone14,5", 1170, 2532}, {"iPhone14,7", 1170, 2532}, {"iPhone15,2", 1179, 2556},
	{"iPhone15,4", 1179, 2556}, {"iPhone16,1", 1179, 2556}, {"iPhone16,2", 1290, 2796},
	{"iPhone17,1", 1206, 2622}, {"iPhone17,3", 1179, 2556}, {"iPhone13,2", 1170, 2532},
}

var generatorIOSVersions = []string{"16.7.10", "17.5.1", "17.6.1", "18.1.1", "18.2", "18.3.1", "18.3.2", "18.4"}

type generatedAndroidModel struct {
	model         string
	build         string
	width, height uint32
}

var generatorAndroidModels = []generatedAndroidModel{
	{"SM-S928N", "UP1A.231005.007", 1440, 3120}, {"SM-S921N", "UP1A.231005.007", 1080, 2340},
	{"SM-S918N", "UP1A.231005.007", 1440, 3088}, {"SM-F946N", "UP1A.231005.007", 1812, 2176},
	{"SM-F731N", "UP1A.231005.007", 1080, 2640}, {"SM-A546S", "UP1A.231005.007", 1080, 2340},
	{"SM-G991N", "TP1A.220624.014", 1080, 2400}, {"SM-A356N", "UP1A.231005.007", 1080, 2340},
	{"Pixel 8", "AP2A.240905.003", 1080, 2400}, {"LM-V500N", "QKQ1.200216.002", 1080, 2460},
}

var (
	generatorAndroidVersions = []string{"12", "13", "14", "15"}
	generatorChromeVersions  = []string{"124.0.6367.179", "128.0.6613.146", "131.0.6778.135", "132.0.6834.163", "133.0.6943.137"}
	generatorCarriers        = []string{"SKTelecom", "KT", "LG U+", "SKTelecom", "KT", "헬로모바일"}
	generatorNetworks        = []string{"wifi", "5g", "lte", "wifi", "5g"}
	generatorLocales         = []string{"ko-KR", "ko-KR", "ko-KR", "ko-KR", "ko-KR", "ko-KR", "en-US", "ko"}
	generatorIPv4Prefixes    = [][2]byte{{211, 234}, {223, 38}, {223, 62}, {39, 7}, {106, 101}, {175, 223}, {118, 235}, {121, 134}}
	generatorReferrers       = []string{
		"https://m.search.naver.com/search.naver?where=m&sm=mtb_jum&query=",
		"https://www.instagram.com/",
		"https://m.youtube.com/",
		"https://talk.kakao.com/",
		"https://toss.im/",
		"",
	}
)

const generatorCampaignCount = 40

// NewGenerator returns a generator for seed.
func NewGenerator(seed uint64) *Generator {
	g := &Generator{
		rng:   rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		clock: time.Date(2025, 5, 5, 0, 0, 0, 0, time.UTC), // 09:00 KST on Children's Day
	}
	g.clock = g.clock.Add(time.Duration(g.rng.Int64N(int64(12 * time.Hour)))).Truncate(time.Millisecond)
	for i := range generatorCampaignCount {
		g.campaigns = append(g.campaigns, g.newCampaign(i))
	}
	return g
}

// Generate returns n records from a fresh generator for seed.
func Generate(seed uint64, n int) []Record {
	g := NewGenerator(seed)
	out := make([]Record, n)
	for i := range out {
		g.Fill(&out[i])
	}
	return out
}

func (g *Generator) newCampaign(i int) generatedCampaign {
	r := g.rng
	ev := r.IntN(len(generatorEvents))
	cat := r.IntN(len(generatorCategories))
	target := generatorTargets[r.IntN(len(generatorTargets))]
	ch := generatorChannels[r.IntN(len(generatorChannels))]
	c := generatedCampaign{
		campaign: NamedID{
			ID:   uint64(2300000 + i*37 + r.IntN(37)),
			Name: fmt.Sprintf("2505_%s_%s_%s_%s", generatorEvents[ev], generatorCategories[cat], target, ch.source),
		},
		slug:     fmt.Sprintf("2505_%s_%s", generatorEventSlugs[ev], generatorCatSlugs[cat]),
		channel:  ch,
		category: generatorCategories[cat],
		event:    generatorEventSlugs[ev],
	}
	for range 2 + r.IntN(4) {
		c.adGroups = append(c.adGroups, NamedID{
			ID: uint64(51000000 + r.IntN(999999)),
			Name: fmt.Sprintf("%s_%s_%s", generatorRegions[r.IntN(len(generatorRegions))],
				generatorAges[r.IntN(len(generatorAges))], generatorGenders[r.IntN(len(generatorGenders))]),
		})
	}
	for range 2 + r.IntN(5) {
		c.creative = append(c.creative, NamedID{
			ID: uint64(880000000 + r.IntN(99999999)),
			Name: fmt.Sprintf("%s_%s_%s_v%d", generatorFormats[r.IntN(len(generatorFormats))],
				generatorCatSlugs[cat], generatorEventSlugs[ev], 1+r.IntN(5)),
		})
	}
	return c
}

// Next returns the next record.
func (g *Generator) Next() Record {
	var rec Record
	g.Fill(&rec)
	return rec
}

// Fill overwrites rec with the next record.
func (g *Generator) Fill(rec *Record) {
	r := g.rng
	*rec = Record{}
	c := &g.campaigns[r.IntN(len(g.campaigns))]
	g.clock = g.clock.Add(time.Duration(r.Int64N(40)) * time.Millisecond)

	rec.ClickID = g.uuid()
	rec.Campaign = c.campaign
	rec.AdGroup = c.adGroups[r.IntN(len(c.adGroups))]
	rec.Creative = c.creative[r.IntN(len(c.creative))]
	rec.Channel = NamedID{ID: c.channel.id, Name: c.channel.name}

	shopID := 10000 + r.IntN(990000)
	menuID := 100000 + r.IntN(9000000)
	shop := generatorShops[r.IntN(len(generatorShops))] + " " + generatorBranches[r.IntN(len(generatorBranches))]
	keyword := generatorKeywords[r.IntN(len(generatorKeywords))]
	placement := generatorPlacements[r.IntN(len(generatorPlacements))]
	coupon := fmt.Sprintf("%s%02d%04d", generatorCouponPrefix(c.event), r.IntN(100), r.IntN(10000))

	rec.UTM = UTM{
		Source:   c.channel.source,
		Medium:   c.channel.medium,
		Campaign: c.slug,
		Term:     keyword,
		Content:  fmt.Sprintf("cr_%d", rec.Creative.ID),
	}
	rec.SubParams = map[string]string{
		"sub1": strconv.Itoa(shopID),
		"sub2": c.category,
		"sub3": placement,
	}
	if keyword != "" {
		rec.SubParams["sub4"] = keyword
	}
	if r.IntN(8) == 0 {
		rec.SubParams["sub5"] = shop
	}
	if r.IntN(8) == 0 {
		rec.SubParams["partner_click_id"] = fmt.Sprintf("%x", r.Uint64())
	}

	clickID := rec.ClickID.String()
	rec.TrackingLink = fmt.Sprintf("https://trk.baedal.app/c/%s?pid=%s&c=%s&sub1=%d",
		g.shortCode(), c.channel.source, c.slug, shopID)
	rec.DeepLinkURL = fmt.Sprintf("baedal://shop/%d?menu=%d&coupon=%s&click_id=%s",
		shopID, menuID, coupon, clickID)
	rec.FallbackURL = fmt.Sprintf("https://baedal.app/shop/%d?utm_source=%s&utm_medium=%s&utm_campaign=%s",
		shopID, c.channel.source, c.channel.medium, c.slug)

	ref := generatorReferrers[r.IntN(len(generatorReferrers))]
	if ref != "" && ref[len(ref)-1] == '=' {
		ref += url.QueryEscape(keyword + " " + c.category)
	}
	rec.Referrer = ref

	rec.Device = g.device(c.channel)

	clicked := g.clock
	rec.ClickedAt = clicked
	if r.IntN(3) == 0 { // view-through impressions are reported by some channels only
		rec.ImpressionAt = clicked.Add(-time.Duration(500+r.IntN(60000)) * time.Millisecond)
	}
	rec.ReceivedAt = clicked.Add(time.Duration(20+r.IntN(400)) * time.Millisecond)
	rec.ExpiresAt = rec.ReceivedAt.Add(time.Hour)
}

func generatorCouponPrefix(event string) string {
	if len(event) >= 4 {
		return "BD" + string(event[0]-32) + string(event[1]-32)
	}
	return "BD"
}

func (g *Generator) device(ch generatedChannel) Device {
	r := g.rng
	var d Device
	app := ""
	if ch.app != "" && r.IntN(4) != 0 {
		app = " " + ch.app
	}
	if r.IntN(100) < 45 {
		m := generatorIOSModels[r.IntN(len(generatorIOSModels))]
		v := generatorIOSVersions[r.IntN(len(generatorIOSVersions))]
		uv := underscoreVersion(v)
		d.OS = "iOS"
		d.OSVersion = v
		d.Model = m.model
		d.ScreenWidth, d.ScreenHeight = m.width, m.height
		if app == "" {
			d.UserAgent = "Mozilla/5.0 (iPhone; CPU iPhone OS " + uv + " like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/" + majorMinor(v) + " Mobile/15E148 Safari/604.1"
		} else {
			d.UserAgent = "Mozilla/5.0 (iPhone; CPU iPhone OS " + uv + " like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148" + app
		}
	} else {
		m := generatorAndroidModels[r.IntN(len(generatorAndroidModels))]
		v := generatorAndroidVersions[r.IntN(len(generatorAndroidVersions))]
		chrome := generatorChromeVersions[r.IntN(len(generatorChromeVersions))]
		d.OS = "Android"
		d.OSVersion = v
		d.Model = m.model
		d.ScreenWidth, d.ScreenHeight = m.width, m.height
		if app == "" {
			d.UserAgent = "Mozilla/5.0 (Linux; Android " + v + "; " + m.model + ") AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + chrome + " Mobile Safari/537.36"
		} else {
			d.UserAgent = "Mozilla/5.0 (Linux; Android " + v + "; " + m.model + " Build/" + m.build + "; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/" + chrome + " Mobile Safari/537.36" + app
		}
	}
	if r.IntN(10) == 0 {
		// KT's IPv6 mobile range.
		var a [16]byte
		a[0], a[1], a[2], a[3] = 0x20, 0x01, 0x0e, 0x60
		for i := 4; i < 16; i++ {
			a[i] = byte(r.Uint32())
		}
		d.IP = netip.AddrFrom16(a)
	} else {
		p := generatorIPv4Prefixes[r.IntN(len(generatorIPv4Prefixes))]
		d.IP = netip.AddrFrom4([4]byte{p[0], p[1], byte(r.IntN(256)), byte(1 + r.IntN(254))})
	}
	d.Locale = generatorLocales[r.IntN(len(generatorLocales))]
	d.Timezone = "Asia/Seoul"
	if r.IntN(50) == 0 {
		d.Timezone = "America/Los_Angeles"
	}
	if r.IntN(5) != 0 {
		d.AdvertisingID = g.uuid()
	}
	d.Carrier = generatorCarriers[r.IntN(len(generatorCarriers))]
	d.Network = generatorNetworks[r.IntN(len(generatorNetworks))]
	return d
}

// uuid returns a random (version 4) UUID.
func (g *Generator) uuid() ClickID {
	var id ClickID
	hi, lo := g.rng.Uint64(), g.rng.Uint64()
	for i := range 8 {
		id[i] = byte(hi >> (56 - 8*i))
		id[8+i] = byte(lo >> (56 - 8*i))
	}
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

const shortCodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

func (g *Generator) shortCode() string {
	var b [8]byte
	for i := range b {
		b[i] = shortCodeAlphabet[g.rng.IntN(len(shortCodeAlphabet))]
	}
	return string(b[:])
}

func underscoreVersion(v string) string {
	out := []byte(v)
	for i, c := range out {
		if c == '.' {
			out[i] = '_'
		}
	}
	return string(out)
}

func majorMinor(v string) string {
	dots := 0
	for i := range len(v) {
		if v[i] == '.' {
			dots++
			if dots == 2 {
				return v[:i]
			}
		}
	}
	return v
}
