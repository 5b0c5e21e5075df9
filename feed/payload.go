package feed

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
)

// A post's payload (Redis key post:{id}) is json.Marshal of its Post, so its
// bytes are always, in this order and without spaces:
//
//	{"id":N,"authorId":N,"username":"…","profilePic":"…","text":"…","createdAt":"…"}
//
// Reads splice payloads into responses as they are instead of decoding and
// encoding every post again. Before a payload is used, scanPayload checks it
// has exactly this layout, with the id that was asked for; any other payload
// (corrupt, from another version, under the wrong key) is treated as missing
// and the post is loaded from PostgreSQL.

// payloadFields are the raw JSON values of one payload's fields, slices of
// the payload: numbers as digits, strings with their quotes and escapes.
type payloadFields struct {
	id, authorID, username, profilePic, text, createdAt []byte
}

// errPayload says a payload does not have the layout of an encoded Post.
var errPayload = errors.New("feed: post payload is not an encoded post")

// payloadLayout is the field sequence of an encoded Post.
var payloadLayout = [...]struct {
	prefix string // the bytes before the value
	str    bool   // a JSON string, else a non-negative integer
}{
	{`{"id":`, false},
	{`,"authorId":`, false},
	{`,"username":`, true},
	{`,"profilePic":`, true},
	{`,"text":`, true},
	{`,"createdAt":`, true},
}

// scanPayload checks that payload is an encoded Post and returns its fields.
// It does not allocate. Strings are checked to be well delimited (escapes
// skipped, no raw control characters); their UTF-8 is not checked again.
func scanPayload(payload []byte) (payloadFields, error) {
	var values [len(payloadLayout)][]byte
	rest := payload
	for i, f := range payloadLayout {
		if len(rest) < len(f.prefix) || string(rest[:len(f.prefix)]) != f.prefix {
			return payloadFields{}, errPayload
		}
		rest = rest[len(f.prefix):]
		var n int
		if f.str {
			n = jsonStringLen(rest)
		} else {
			for n < len(rest) && n < 20 && rest[n] >= '0' && rest[n] <= '9' {
				n++
			}
		}
		if n == 0 {
			return payloadFields{}, errPayload
		}
		values[i], rest = rest[:n], rest[n:]
	}
	if len(rest) != 1 || rest[0] != '}' {
		return payloadFields{}, errPayload
	}
	return payloadFields{id: values[0], authorID: values[1], username: values[2],
		profilePic: values[3], text: values[4], createdAt: values[5]}, nil
}

// jsonStringLen returns the length of the JSON string s starts with, quotes
// included, or 0 if s does not start with a well-delimited one.
func jsonStringLen(s []byte) int {
	if len(s) < 2 || s[0] != '"' {
		return 0
	}
	for i := 1; i < len(s); i++ {
		if !stringSpecial[s[i]] {
			continue
		}
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte; \uXXXX's digits are plain bytes
		default:
			return 0 // a raw control character
		}
	}
	return 0
}

// stringSpecial marks the bytes jsonStringLen must look at: the quote, the
// backslash and the control characters JSON forbids raw in a string.
var stringSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// checkPayload returns payload's fields if it is the encoded Post with the
// given id.
func checkPayload(payload []byte, id int64) (payloadFields, error) {
	f, err := scanPayload(payload)
	if err != nil {
		return f, err
	}
	var buf [20]byte
	if string(f.id) != string(strconv.AppendInt(buf[:0], id, 10)) {
		return f, errPayload
	}
	return f, nil
}

// appendPagePayload appends the JSON of a Page holding the given payloads:
// {"posts":[…],"nextBefore":N}, nextBefore left out when 0 (as for Page).
func appendPagePayload(dst []byte, posts []json.RawMessage, nextBefore int64) []byte {
	dst = append(dst, `{"posts":[`...)
	for i, p := range posts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, p...)
	}
	dst = append(dst, ']')
	if nextBefore != 0 {
		dst = append(dst, `,"nextBefore":`...)
		dst = strconv.AppendInt(dst, nextBefore, 10)
	}
	return append(dst, '}')
}

// appendCompatPayload appends the JSON array of CompatFeedItem of the given
// post payloads, each {"username":…,"profilePic":…,"text":…,"timestamp":…}.
// cache, when not nil, keeps each post's element by post id: like the payload
// it is made from, an element never changes.
func appendCompatPayload(dst []byte, posts []json.RawMessage, cache *postCache) ([]byte, error) {
	var ids []int64
	var elems []json.RawMessage
	if cache != nil {
		ids, elems = make([]int64, len(posts)), make([]json.RawMessage, len(posts))
		for i, p := range posts {
			id, ok := payloadID(p)
			if !ok {
				return dst, errPayload
			}
			ids[i] = id
		}
		cache.lookup(ids, elems)
	}
	var fresh []json.RawMessage
	dst = append(dst, '[')
	for i, p := range posts {
		if i > 0 {
			dst = append(dst, ',')
		}
		if elems != nil && elems[i] != nil {
			dst = append(dst, elems[i]...)
			continue
		}
		start := len(dst)
		var err error
		if dst, err = appendCompatItem(dst, p); err != nil {
			return dst, err
		}
		if cache != nil {
			if fresh == nil {
				fresh = make([]json.RawMessage, len(posts))
			}
			fresh[i] = slices.Clone(dst[start:])
		}
	}
	if fresh != nil {
		cache.add(ids, fresh)
	}
	return append(dst, ']'), nil
}

// appendCompatItem appends one post payload's CompatFeedItem.
func appendCompatItem(dst []byte, payload json.RawMessage) ([]byte, error) {
	f, err := scanPayload(payload)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"username":`...)
	dst = append(dst, f.username...)
	dst = append(dst, `,"profilePic":`...)
	dst = append(dst, f.profilePic...)
	dst = append(dst, `,"text":`...)
	dst = append(dst, f.text...)
	dst = append(dst, `,"timestamp":`...)
	dst = append(dst, f.createdAt...)
	return append(dst, '}'), nil
}

// payloadID reads the id at the start of an encoded Post, {"id":N,…}, without
// checking the rest (scanPayload does).
func payloadID(payload []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(payload, []byte(payloadLayout[0].prefix))
	if !ok {
		return 0, false
	}
	n := 0
	for n < len(rest) && n < 19 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n == len(rest) || rest[n] != ',' {
		return 0, false
	}
	id, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	return id, err == nil
}
