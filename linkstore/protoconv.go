package linkstore

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/baedal/baedal/linkstore/linkpb"
)

// protoScratch is a reusable protobuf message tree plus buffers for one
// encode. Filling it does not allocate; it lives in protoScratchPool.
type protoScratch struct {
	msg       linkpb.ClickRecord
	campaign  linkpb.NamedID
	adGroup   linkpb.NamedID
	creative  linkpb.NamedID
	channel   linkpb.NamedID
	device    linkpb.Device
	utm       linkpb.UTM
	subParams map[string]string
	clickID   [16]byte
	adID      [16]byte
	ip        [16]byte
	buf       []byte // marshaled protobuf (compressing codecs)
	out       []byte // decompressed payload (decoders)
}

var protoScratchPool = sync.Pool{New: func() any { return new(protoScratch) }}

func getProtoScratch() *protoScratch { return protoScratchPool.Get().(*protoScratch) }

// maxPooledBuffer keeps one huge value from pinning memory in the pool.
const maxPooledBuffer = 64 << 10

func putProtoScratch(s *protoScratch) {
	s.resetMessage() // drop references to the caller's strings so the pool does not pin them
	if cap(s.buf) > maxPooledBuffer {
		s.buf = nil
	}
	if cap(s.out) > maxPooledBuffer {
		s.out = nil
	}
	protoScratchPool.Put(s)
}

// resetMessage empties the message tree so that nothing of a previous
// record leaks into the next one.
func (s *protoScratch) resetMessage() {
	s.msg = linkpb.ClickRecord{}
	s.campaign = linkpb.NamedID{}
	s.adGroup = linkpb.NamedID{}
	s.creative = linkpb.NamedID{}
	s.channel = linkpb.NamedID{}
	s.device = linkpb.Device{}
	s.utm = linkpb.UTM{}
	clear(s.subParams)
}

var deterministicMarshal = proto.MarshalOptions{Deterministic: true}

// appendProtoGenerated appends the protobuf encoding of rec to dst with the
// generated linkpb code (deterministic marshaling: map entries sorted). It is
// the reference the hand-written wire encoder (appendProto, protowire.go) is
// tested against byte for byte; the codecs use appendProto.
func appendProtoGenerated(dst []byte, rec *Record, s *protoScratch) ([]byte, error) {
	s.resetMessage()
	m := &s.msg
	if rec.ClickID != (ClickID{}) {
		s.clickID = rec.ClickID
		m.ClickId = s.clickID[:]
	}
	m.TrackingLink = rec.TrackingLink
	m.Campaign = fillNamedID(&s.campaign, rec.Campaign)
	m.AdGroup = fillNamedID(&s.adGroup, rec.AdGroup)
	m.Creative = fillNamedID(&s.creative, rec.Creative)
	m.Channel = fillNamedID(&s.channel, rec.Channel)
	if len(rec.SubParams) > 0 {
		// The generated code never modifies the map, so the caller's map
		// could be used directly; it is copied anyway so that a concurrent
		// writer to rec.SubParams cannot race with marshaling internals.
		if s.subParams == nil {
			s.subParams = make(map[string]string, len(rec.SubParams))
		}
		for k, v := range rec.SubParams {
			s.subParams[k] = v
		}
		m.SubParams = s.subParams
	}
	m.DeepLinkUrl = rec.DeepLinkURL
	m.FallbackUrl = rec.FallbackURL
	if rec.Device != (Device{}) {
		d := &s.device
		dev := &rec.Device
		if dev.IP.IsValid() {
			if dev.IP.Zone() != "" {
				return dst, fmt.Errorf("%w: device IP %s has a zone; only plain IPv4/IPv6 addresses are stored", ErrInvalidRecord, dev.IP)
			}
			if dev.IP.Is4() {
				a := dev.IP.As4()
				d.Ip = s.ip[:copy(s.ip[:], a[:])]
			} else {
				s.ip = dev.IP.As16()
				d.Ip = s.ip[:]
			}
		}
		d.UserAgent = dev.UserAgent
		d.Os = dev.OS
		d.OsVersion = dev.OSVersion
		d.Model = dev.Model
		d.Locale = dev.Locale
		d.Timezone = dev.Timezone
		d.ScreenWidth = dev.ScreenWidth
		d.ScreenHeight = dev.ScreenHeight
		if dev.AdvertisingID != (ClickID{}) {
			s.adID = dev.AdvertisingID
			d.AdvertisingId = s.adID[:]
		}
		d.Carrier = dev.Carrier
		d.Network = dev.Network
		m.Device = d
	}
	m.ClickedAtMs = timeToMillis(rec.ClickedAt)
	m.ImpressionAtMs = timeToMillis(rec.ImpressionAt)
	m.ReceivedAtMs = timeToMillis(rec.ReceivedAt)
	m.ExpiresAtMs = timeToMillis(rec.ExpiresAt)
	m.Referrer = rec.Referrer
	if rec.UTM != (UTM{}) {
		s.utm = linkpb.UTM{
			Source:   rec.UTM.Source,
			Medium:   rec.UTM.Medium,
			Campaign: rec.UTM.Campaign,
			Term:     rec.UTM.Term,
			Content:  rec.UTM.Content,
		}
		m.Utm = &s.utm
	}
	out, err := deterministicMarshal.MarshalAppend(dst, m)
	if err != nil {
		// Only invalid UTF-8 in a string field gets here.
		return dst, fmt.Errorf("%w: click %s: protobuf marshal: %v", ErrInvalidRecord, rec.ClickID, err)
	}
	return out, nil
}

func fillNamedID(dst *linkpb.NamedID, v NamedID) *linkpb.NamedID {
	if v == (NamedID{}) {
		return nil
	}
	dst.Id = v.ID
	dst.Name = v.Name
	return dst
}

// decodeProtoGenerated decodes a protobuf payload with the generated linkpb
// code. It is the reference the hand-written wire decoder (decodeProto,
// protowire.go) is tested against; the codecs use decodeProto.
func decodeProtoGenerated(payload []byte) (*Record, error) {
	var m linkpb.ClickRecord
	if err := proto.Unmarshal(payload, &m); err != nil {
		return nil, fmt.Errorf("%w: protobuf payload of %d bytes: %v", ErrCorrupt, len(payload), err)
	}
	rec := &Record{
		TrackingLink: m.TrackingLink,
		Campaign:     namedIDFromProto(m.Campaign),
		AdGroup:      namedIDFromProto(m.AdGroup),
		Creative:     namedIDFromProto(m.Creative),
		Channel:      namedIDFromProto(m.Channel),
		DeepLinkURL:  m.DeepLinkUrl,
		FallbackURL:  m.FallbackUrl,
		ClickedAt:    millisToTime(m.ClickedAtMs),
		ImpressionAt: millisToTime(m.ImpressionAtMs),
		ReceivedAt:   millisToTime(m.ReceivedAtMs),
		ExpiresAt:    millisToTime(m.ExpiresAtMs),
		Referrer:     m.Referrer,
	}
	var err error
	if rec.ClickID, err = uuidFromBytes("click_id", m.ClickId); err != nil {
		return nil, err
	}
	if len(m.SubParams) > 0 {
		rec.SubParams = m.SubParams
	}
	if d := m.Device; d != nil {
		dev := &rec.Device
		switch len(d.Ip) {
		case 0:
		case 4, 16:
			dev.IP, _ = netip.AddrFromSlice(d.Ip)
		default:
			return nil, fmt.Errorf("%w: device.ip has %d bytes, want 0, 4 or 16", ErrCorrupt, len(d.Ip))
		}
		dev.UserAgent = d.UserAgent
		dev.OS = d.Os
		dev.OSVersion = d.OsVersion
		dev.Model = d.Model
		dev.Locale = d.Locale
		dev.Timezone = d.Timezone
		dev.ScreenWidth = d.ScreenWidth
		dev.ScreenHeight = d.ScreenHeight
		if dev.AdvertisingID, err = uuidFromBytes("device.advertising_id", d.AdvertisingId); err != nil {
			return nil, err
		}
		dev.Carrier = d.Carrier
		dev.Network = d.Network
	}
	if u := m.Utm; u != nil {
		rec.UTM = UTM{Source: u.Source, Medium: u.Medium, Campaign: u.Campaign, Term: u.Term, Content: u.Content}
	}
	return rec, nil
}

func namedIDFromProto(p *linkpb.NamedID) NamedID {
	if p == nil {
		return NamedID{}
	}
	return NamedID{ID: p.Id, Name: p.Name}
}

func uuidFromBytes(field string, b []byte) (ClickID, error) {
	var id ClickID
	switch len(b) {
	case 0:
		return id, nil
	case len(id):
		copy(id[:], b)
		return id, nil
	}
	return id, fmt.Errorf("%w: %s has %d bytes, want 0 or 16", ErrCorrupt, field, len(b))
}

// timeToMillis maps the zero time to 0 (unset) and others to Unix milliseconds.
func timeToMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// millisToTime is the inverse of timeToMillis: 0 is the zero time, others UTC.
func millisToTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Normalized returns a copy of rec as every codec decodes it: times in UTC
// truncated to milliseconds (the zero time and the Unix epoch itself both
// read as the zero time), and an empty SubParams map as nil. For every codec
// c, c.Decode(c.Encode(rec)) equals rec.Normalized().
func (rec *Record) Normalized() Record {
	out := *rec
	out.ClickedAt = millisToTime(timeToMillis(rec.ClickedAt))
	out.ImpressionAt = millisToTime(timeToMillis(rec.ImpressionAt))
	out.ReceivedAt = millisToTime(timeToMillis(rec.ReceivedAt))
	out.ExpiresAt = millisToTime(timeToMillis(rec.ExpiresAt))
	if len(rec.SubParams) == 0 {
		out.SubParams = nil
	}
	return out
}
