package linkstore

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"time"
)

// Record is one ad click that must later resolve to a deferred deep link.
//
// Its JSON form (encoding/json with these tags) is the baseline format "as it
// is stored today". Codecs keep times at millisecond precision in UTC; a zero
// time.Time stays zero. An empty SubParams map decodes as nil.
type Record struct {
	ClickID      ClickID           `json:"click_id"`
	TrackingLink string            `json:"tracking_link"`
	Campaign     NamedID           `json:"campaign"`
	AdGroup      NamedID           `json:"ad_group"`
	Creative     NamedID           `json:"creative"`
	Channel      NamedID           `json:"channel"`
	SubParams    map[string]string `json:"sub_params,omitempty"`
	DeepLinkURL  string            `json:"deep_link_url"`
	FallbackURL  string            `json:"fallback_url"`
	Device       Device            `json:"device"`
	ClickedAt    time.Time         `json:"clicked_at"`
	ImpressionAt time.Time         `json:"impression_at,omitzero"`
	ReceivedAt   time.Time         `json:"received_at"`
	ExpiresAt    time.Time         `json:"expires_at"`
	Referrer     string            `json:"referrer"`
	UTM          UTM               `json:"utm"`
}

// NamedID is an ad-platform entity (campaign, ad group, creative, channel).
type NamedID struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
}

// Device is what the click request told us about the device.
type Device struct {
	IP            netip.Addr `json:"ip,omitzero"`
	UserAgent     string     `json:"user_agent"`
	OS            string     `json:"os"`
	OSVersion     string     `json:"os_version"`
	Model         string     `json:"model"`
	Locale        string     `json:"locale"`
	Timezone      string     `json:"timezone"`
	ScreenWidth   uint32     `json:"screen_width"`
	ScreenHeight  uint32     `json:"screen_height"`
	AdvertisingID ClickID    `json:"advertising_id,omitzero"` // IDFA/GAID; zero when tracking is limited
	Carrier       string     `json:"carrier"`
	Network       string     `json:"network"`
}

// UTM holds the utm_* parameters of the landing URL.
type UTM struct {
	Source   string `json:"source"`
	Medium   string `json:"medium"`
	Campaign string `json:"campaign"`
	Term     string `json:"term"`
	Content  string `json:"content"`
}

// ClickID is a UUID as 16 raw bytes. Its text form is the canonical
// 36-character lowercase 8-4-4-4-12 hex form.
type ClickID [16]byte

// UUIDTextLen is the length of a UUID in its canonical text form.
const UUIDTextLen = 36

// String returns the canonical lowercase text form.
func (id ClickID) String() string {
	return string(id.AppendText(nil))
}

// AppendText appends the canonical text form to dst.
func (id ClickID) AppendText(dst []byte) []byte {
	var buf [UUIDTextLen]byte
	hex.Encode(buf[0:8], id[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], id[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], id[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], id[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], id[10:16])
	return append(dst, buf[:]...)
}

// MarshalText implements encoding.TextMarshaler.
func (id ClickID) MarshalText() ([]byte, error) {
	return id.AppendText(nil), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ClickID) UnmarshalText(text []byte) error {
	parsed, err := parseUUID(text)
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// TextForm describes the text form for a problem about a value that does
// not parse (api.TextForm).
func (ClickID) TextForm() string {
	return "a UUID of 32 hex digits in the 8-4-4-4-12 form, such as 0190b5a8-7c3e-7b4a-9d2e-3f1a2b3c4d5e"
}

// ParseClickID parses the 36-character text form (either hex case).
func ParseClickID(text string) (ClickID, error) {
	return parseUUID([]byte(text))
}

func parseUUID(text []byte) (ClickID, error) {
	var id ClickID
	if len(text) != UUIDTextLen {
		return id, fmt.Errorf("%w: UUID %q has %d bytes, want %d", ErrInvalidUUID, truncateForError(text), len(text), UUIDTextLen)
	}
	if text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-' {
		return id, fmt.Errorf("%w: UUID %q has no hyphens at offsets 8, 13, 18, 23", ErrInvalidUUID, text)
	}
	groups := [...][2]int{{0, 8}, {9, 13}, {14, 18}, {19, 23}, {24, 36}}
	out := id[:0]
	for _, g := range groups {
		var err error
		out, err = hex.AppendDecode(out, text[g[0]:g[1]])
		if err != nil {
			return ClickID{}, fmt.Errorf("%w: UUID %q: %v", ErrInvalidUUID, text, err)
		}
	}
	return id, nil
}

// truncateForError keeps error messages short when the input is huge.
func truncateForError(b []byte) []byte {
	const max = 64
	if len(b) > max {
		return b[:max]
	}
	return b
}
