package linkstore

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// NewClickID returns a new click id: a version 7 UUID (RFC 9562) of now, so
// the id carries its creation time and the bucketed layout finds its
// bucket from the id alone.
func NewClickID() ClickID { return NewClickIDAt(time.Now()) }

// NewClickIDAt returns a version 7 UUID for t: 48 bits of Unix
// milliseconds, the version nibble 7, 12 random bits, the variant bits 10
// and 62 random bits (RFC 9562 §5.7). Times before 1970 or after the 48-bit
// range are clamped to it.
func NewClickIDAt(t time.Time) ClickID {
	var id ClickID
	_, _ = rand.Read(id[6:])
	ms := uint64(max(t.UnixMilli(), 0))
	ms = min(ms, 1<<48-1)
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], ms)
	copy(id[:6], ts[2:])
	id[6] = id[6]&0x0f | 0x70
	id[8] = id[8]&0x3f | 0x80
	return id
}

// Version returns the UUID version nibble (4 for random ids, 7 for
// time-ordered ones).
func (id ClickID) Version() int { return int(id[6] >> 4) }

// V7Time returns the creation time a version 7 id carries, at millisecond
// precision; ok is false for every other version or variant.
func (id ClickID) V7Time() (t time.Time, ok bool) {
	if id.Version() != 7 || id[8]&0xc0 != 0x80 {
		return time.Time{}, false
	}
	var ts [8]byte
	copy(ts[2:], id[:6])
	return time.UnixMilli(int64(binary.BigEndian.Uint64(ts[:]))).UTC(), true
}
