package api

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the text pass every request body gets (CheckBodyText): a
// small JSON scanner that checks the text of every key and string and
// refuses a key given twice in its object. A body that passes costs one
// scratch struct (and a map per object of more than manyKeys keys); the
// JSON path is built only when it finds something.

// The problems scanBody finds, as a problem's detail says them.
const (
	problemInvalidUTF8 = "is not valid UTF-8"
	problemNUL         = "contains a NUL character (U+0000), which is not allowed"
	problemSurrogate   = `contains a UTF-16 surrogate escape (\uD800 to \uDFFF) that is not part of a high-low pair: send the character as UTF-8, or as a valid pair such as \uD83C\uDF55`
	problemDuplicate   = "is given more than once in its object: give each key once"
)

// maxScanDepth is the nesting beyond which scanBody stops, as encoding/json
// does (it refuses such a body).
const maxScanDepth = 10000

// manyKeys is the number of keys of one object beyond which scanBody looks
// duplicates up in a map rather than comparing with every earlier key.
const manyKeys = 32

// scanFrame is one open object or array.
type scanFrame struct {
	object   bool
	index    int    // arrays: index of the current element
	key      []byte // objects: the current key, decoded
	keysFrom int    // objects: where its keys start in bodyScan.keys
	seen     map[string]struct{}
}

// bodyScan is the state of one scanBody.
type bodyScan struct {
	b        []byte
	i        int
	frames   []scanFrame
	keys     [][]byte // the keys of every open object, innermost last
	top      int      // index of the current top-level value
	path     string   // of the first finding
	problem  string   // "" until the first finding
	frameBuf [16]scanFrame
	keyBuf   [64][]byte
}

// scanBody walks body, one JSON value or a stream of them such as NDJSON,
// in one pass. It returns the JSON path of the first key or string that is
// not valid UTF-8, holds a NUL (the escape \u0000) or a surrogate escape
// outside a valid pair, or of the first key given twice in its object, and
// what is wrong with it: "text", "menus[2].name", "[3].fields.name" for the
// fourth value of a stream (a single value is named without its "[0]"). It
// finds nothing after a syntax error, which the JSON decoder reports;
// wellFormed is true when the whole body is JSON.
func scanBody(body []byte) (path, problem string, wellFormed bool) {
	s := &bodyScan{b: body, top: -1}
	s.frames, s.keys = s.frameBuf[:0], s.keyBuf[:0]
	for {
		s.skipSpace()
		if s.i == len(s.b) {
			return s.result(true, false)
		}
		s.top++
		if !s.value() {
			return s.result(false, false)
		}
		if s.problem != "" {
			s.skipSpace()
			return s.result(s.i == len(s.b), s.i < len(s.b))
		}
	}
}

// result returns the finding, if any; the path of one in a body that is a
// single value (no more values follow it) loses its "[0]".
func (s *bodyScan) result(wellFormed, moreValues bool) (path, problem string, ok bool) {
	if s.problem == "" {
		return "", "", wellFormed
	}
	path = s.path
	if s.top == 0 && !moreValues {
		path = strings.TrimPrefix(strings.TrimPrefix(path, "[0]"), ".")
	}
	if path == "" {
		path = "body"
	}
	return path, s.problem, wellFormed
}

func (s *bodyScan) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// value scans one top-level value, and stops after it. It returns false at
// a syntax error or beyond maxScanDepth.
func (s *bodyScan) value() bool {
	for {
		s.skipSpace()
		if s.i >= len(s.b) {
			return false
		}
		switch c := s.b[s.i]; {
		case c == '{' || c == '[':
			s.i++
			if len(s.frames) == maxScanDepth {
				return false
			}
			s.frames = append(s.frames, scanFrame{object: c == '{', keysFrom: len(s.keys)})
			s.skipSpace()
			if s.i < len(s.b) && s.b[s.i] == c+2 { // '}' or ']'
				s.i++
				s.pop()
				break
			}
			if c == '{' && !s.key() {
				return false
			}
			continue
		case c == '"':
			problem, _, ok := s.str()
			if !ok {
				return false
			}
			if problem != "" {
				s.found(problem)
			}
		case c == 't':
			if !s.literal("true") {
				return false
			}
		case c == 'f':
			if !s.literal("false") {
				return false
			}
		case c == 'n':
			if !s.literal("null") {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			s.number()
		default:
			return false
		}
		// A value is complete: close the containers it completes, then go
		// on to the next element or member.
		for {
			if len(s.frames) == 0 {
				return true
			}
			s.skipSpace()
			if s.i >= len(s.b) {
				return false
			}
			f := &s.frames[len(s.frames)-1]
			c := s.b[s.i]
			if (f.object && c == '}') || (!f.object && c == ']') {
				s.i++
				s.pop()
				continue
			}
			if c != ',' {
				return false
			}
			s.i++
			if f.object {
				if !s.key() {
					return false
				}
			} else {
				f.index++
			}
			break
		}
	}
}

func (s *bodyScan) pop() {
	f := &s.frames[len(s.frames)-1]
	if f.object {
		clear(s.keys[f.keysFrom:])
		s.keys = s.keys[:f.keysFrom]
	}
	*f = scanFrame{}
	s.frames = s.frames[:len(s.frames)-1]
}

// key scans an object key and the colon after it, checks the key's text
// and whether the object has it already, and makes it the current key.
func (s *bodyScan) key() bool {
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	start := s.i
	problem, escaped, ok := s.str()
	if !ok {
		return false
	}
	key := s.b[start+1 : s.i-1]
	if escaped {
		var k string
		if json.Unmarshal(s.b[start:s.i], &k) != nil {
			return false
		}
		key = []byte(k)
	}
	f := &s.frames[len(s.frames)-1]
	f.key = key
	if s.problem == "" {
		switch {
		case problem != "":
			s.found("the key " + problem)
		case s.addKey(f, key):
			s.found(problemDuplicate)
		}
	}
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return false
	}
	s.i++
	return true
}

// addKey records key as a key of the object f and reports whether f had it
// already.
func (s *bodyScan) addKey(f *scanFrame, key []byte) (duplicate bool) {
	if f.seen != nil {
		if _, dup := f.seen[string(key)]; dup {
			return true
		}
		f.seen[string(key)] = struct{}{}
		return false
	}
	earlier := s.keys[f.keysFrom:]
	for _, k := range earlier {
		if bytes.Equal(k, key) {
			return true
		}
	}
	s.keys = append(s.keys, key)
	if len(earlier)+1 > manyKeys {
		f.seen = make(map[string]struct{}, 2*manyKeys)
		for _, k := range s.keys[f.keysFrom:] {
			f.seen[string(k)] = struct{}{}
		}
	}
	return false
}

// found records the first finding at the current position.
func (s *bodyScan) found(problem string) {
	if s.problem != "" {
		return
	}
	var p strings.Builder
	p.WriteString("[" + strconv.Itoa(s.top) + "]")
	for _, f := range s.frames {
		if f.object {
			p.WriteString("." + pathKey(f.key))
		} else {
			p.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	s.path, s.problem = p.String(), problem
}

// stringByte marks the bytes a JSON string holds as they are: all but the
// quote, the backslash and the control characters. Bytes of multi-byte
// UTF-8 sequences are among them (none is below 0x80).
var stringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str scans the string whose opening quote is at s.i and moves past its
// closing quote. It returns what is wrong with its text ("" when nothing)
// and whether it holds escapes; ok is false at a syntax error. The text
// between escapes is checked as UTF-8 only when it has a non-ASCII byte.
func (s *bodyScan) str() (problem string, escaped, ok bool) {
	b := s.b
	i := s.i + 1
	for {
		from, or := i, byte(0)
		for i < len(b) && stringByte[b[i]] {
			or |= b[i]
			i++
		}
		if or >= utf8.RuneSelf && problem == "" && !utf8.Valid(b[from:i]) {
			problem = problemInvalidUTF8
		}
		if i >= len(b) {
			return "", false, false // no closing quote
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			return problem, escaped, true
		case '\\':
			escaped = true
			if i+1 >= len(b) {
				return "", false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(b, i+2)
				if !ok {
					return "", false, false
				}
				i += 6
				switch {
				case r == 0:
					if problem == "" {
						problem = problemNUL
					}
				case 0xD800 <= r && r < 0xDC00: // a high surrogate: a low one must follow
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if low, ok := hex4(b, i+2); ok && 0xDC00 <= low && low < 0xE000 {
							i += 6
							continue
						}
					}
					if problem == "" {
						problem = problemSurrogate
					}
				case 0xDC00 <= r && r < 0xE000: // a low surrogate alone
					if problem == "" {
						problem = problemSurrogate
					}
				}
			default:
				return "", false, false
			}
		default: // a control character, NUL included: not JSON
			return "", false, false
		}
	}
}

// hex4 parses the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func (s *bodyScan) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// number moves past a number. Its syntax is the decoder's business: a
// malformed one is refused there.
func (s *bodyScan) number() {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case '0' <= c && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			s.i++
		default:
			return
		}
	}
}
