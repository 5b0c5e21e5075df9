package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file places a JSON body's fault the way a client can act on it:
// checkShape walks the body against the Go type it decodes into and names
// the exact JSON path ("device.ip", "items[2].price") and the form the value
// must have, in JSON's words. encoding/json alone names no path for the
// errors of UnmarshalText and UnmarshalJSON methods, drops array indices,
// and words its errors in Go ("parsing time ... as \"2006-01-02T15:04:05Z07:00\"",
// "cannot unmarshal number -1 into Go struct field ... of type uint32").

// A TextForm is a type decoded from a JSON string that describes the form
// of that string, for the problem of a value that does not parse: "a UUID
// such as 0190b5a8-7c3e-7b4a-9d2e-3f1a2b3c4d5e".
type TextForm interface {
	TextForm() string
}

// shapeFault is where a JSON value does not fit its Go type, and how.
type shapeFault struct {
	path, detail string
	allowed      []string
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	addrType            = reflect.TypeFor[netip.Addr]()
	textFormType        = reflect.TypeFor[TextForm]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// checkShape walks data, one JSON value, against t, the type encoding/json
// decodes it into, and returns the first place where it does not fit (nil
// when it fits): a key that names no field exactly (encoding/json would
// take a key that differs in letter case, or refuse an unknown key without
// its path), a value of the wrong JSON kind, a number out of the field's
// range, or a string the field's type does not parse. path names data.
func checkShape(path string, data []byte, t reflect.Type) *shapeFault {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		return nil // encoding/json leaves the field as it is
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		if json.Unmarshal(data, reflect.New(t).Interface()) != nil {
			return wrongValue(path, data, t)
		}
		return nil
	}
	kind := rawJSONKind(data)
	switch t.Kind() {
	case reflect.Struct:
		if kind != "object" {
			return wrongValue(path, data, t)
		}
		fields := infoOf(t).fields
		return forEachMember(data, func(key string, value []byte) *shapeFault {
			at := joinPath(path, pathKey([]byte(key)))
			for _, f := range fields {
				if f.name == key {
					if f.quoted {
						return nil // ",string": encoding/json's own rules
					}
					return checkShape(at, value, f.typ)
				}
			}
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.name
			}
			for _, name := range names {
				if strings.EqualFold(name, key) {
					return &shapeFault{at, fmt.Sprintf("unknown field: field names are case-sensitive; did you mean %q?", name), names}
				}
			}
			return &shapeFault{at, "unknown field", names}
		})
	case reflect.Map:
		if kind != "object" {
			return wrongValue(path, data, t)
		}
		return forEachMember(data, func(key string, value []byte) *shapeFault {
			return checkShape(joinPath(path, pathKey([]byte(key))), value, t.Elem())
		})
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			if json.Unmarshal(data, reflect.New(t).Interface()) != nil {
				return wrongValue(path, data, t) // []byte: base64 in a string
			}
			return nil
		}
		if kind != "array" {
			return wrongValue(path, data, t)
		}
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return nil // a syntax error: the decoder's to report
		}
		for i, item := range items {
			if fault := checkShape(path+"["+strconv.Itoa(i)+"]", item, t.Elem()); fault != nil {
				return fault
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(string(data), 10, t.Bits()); kind != "number" || err != nil {
			return wrongValue(path, data, t)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if _, err := strconv.ParseUint(string(data), 10, t.Bits()); kind != "number" || err != nil {
			return wrongValue(path, data, t)
		}
	case reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(string(data), t.Bits()); kind != "number" || err != nil {
			return wrongValue(path, data, t)
		}
	case reflect.Bool:
		if kind != "boolean" {
			return wrongValue(path, data, t)
		}
	case reflect.String:
		if kind != "string" {
			return wrongValue(path, data, t)
		}
	}
	return nil
}

// decodesItself reports whether t (or *t) decodes itself from JSON, with
// UnmarshalJSON or UnmarshalText.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || p.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// forEachMember calls fn with each member of the JSON object data, in the
// order of the body, until fn returns a fault.
func forEachMember(data []byte, fn func(key string, value []byte) *shapeFault) *shapeFault {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil
		}
		var value json.RawMessage
		if dec.Decode(&value) != nil {
			return nil
		}
		if fault := fn(key, value); fault != nil {
			return fault
		}
	}
	return nil
}

// wrongValue is the fault of data, which does not decode into t.
func wrongValue(path string, data []byte, t reflect.Type) *shapeFault {
	return &shapeFault{path: path, detail: "must be " + wantedForm(t) + ", got " + describeValue(data)}
}

// wantedForm says, in JSON's words, what JSON value t decodes from.
func wantedForm(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "an RFC 3339 timestamp such as 2026-11-28T09:00:00Z"
	case t == addrType:
		return "an IPv4 or IPv6 address such as 203.0.113.7 or 2001:db8::7"
	case t.Implements(textFormType):
		return reflect.Zero(t).Interface().(TextForm).TextForm()
	case reflect.PointerTo(t).Implements(textFormType):
		return reflect.New(t).Interface().(TextForm).TextForm()
	case decodesItself(t):
		return "a value in the form this field takes"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer in %d..%d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("an integer in 0..%d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("a number of at most %g in magnitude", floatMax(t.Bits()))
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another JSON value"
}

func floatMax(bits int) float64 {
	if bits == 32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// describeValue renders a raw JSON value for a problem: a number, boolean
// or null as it is, a string quoted, both shortened; a container by kind.
func describeValue(data []byte) string {
	switch kind := rawJSONKind(data); kind {
	case "string":
		var s string
		if json.Unmarshal(data, &s) != nil {
			return "a string"
		}
		return strconv.Quote(truncate(s, 60))
	case "object", "array":
		return "an " + kind
	case "":
		return "nothing"
	default:
		return truncate(string(data), 40)
	}
}

// rawJSONKind names the kind of a JSON value from its first byte: "object",
// "array", "string", "number", "boolean", "null", or "" for none.
func rawJSONKind(data []byte) string {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return ""
	}
	switch c := data[0]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || '0' <= c && c <= '9':
		return "number"
	}
	return "invalid"
}

// structField is one field of a struct as encoding/json sees it.
type structField struct {
	name   string
	typ    reflect.Type
	quoted bool // the ",string" option
}

// jsonStructFields lists the fields encoding/json decodes into t, in
// declaration order, with the fields of embedded structs without a JSON
// name in their place.
func jsonStructFields(t reflect.Type) []structField {
	var out []structField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, jsonStructFields(ft)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, structField{name: name, typ: f.Type, quoted: strings.Contains(","+opts+",", ",string,")})
	}
	return out
}

// typeInfo is what the shape walks need of a type, computed once per type.
type typeInfo struct {
	decodesItself bool
	fields        []structField // structs
}

var typeInfos sync.Map // reflect.Type → *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if v, ok := typeInfos.Load(t); ok {
		return v.(*typeInfo)
	}
	info := &typeInfo{decodesItself: decodesItself(t)}
	if t.Kind() == reflect.Struct {
		info.fields = jsonStructFields(t)
	}
	v, _ := typeInfos.LoadOrStore(t, info)
	return v.(*typeInfo)
}

// keysMatchExactly reports whether every object key of data, one JSON
// value that encoding/json decoded into t without error, names its field
// exactly as spelled: encoding/json also takes a key that differs in letter
// case, which checkShape refuses. It is the cheap walk of the common case:
// one pass over the bytes, no allocation but for keys with escapes.
func keysMatchExactly(data []byte, t reflect.Type) bool {
	w := keyWalk{b: data}
	return w.value(t)
}

// keyWalk is a cursor over JSON that is known to be valid.
type keyWalk struct {
	b []byte
	i int
}

func (w *keyWalk) value(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	w.space()
	info := infoOf(t)
	c := w.peek()
	switch {
	case info.decodesItself:
	case t.Kind() == reflect.Struct && c == '{':
		return w.members(func(key []byte) bool {
			for _, f := range info.fields {
				if f.name == string(key) {
					if f.quoted {
						w.skip()
						return true
					}
					return w.value(f.typ)
				}
			}
			return false
		})
	case t.Kind() == reflect.Map && c == '{':
		return w.members(func([]byte) bool { return w.value(t.Elem()) })
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && c == '[':
		w.i++
		for {
			w.space()
			switch w.peek() {
			case ']':
				w.i++
				return true
			case 0:
				return true
			case ',':
				w.i++
				continue
			}
			if !w.value(t.Elem()) {
				return false
			}
		}
	}
	w.skip()
	return true
}

// members walks the object at w.i, calling member with each key (decoded)
// and w at the key's value, which member must move past.
func (w *keyWalk) members(member func(key []byte) bool) bool {
	w.i++ // '{'
	for {
		w.space()
		switch w.peek() {
		case '}':
			w.i++
			return true
		case 0:
			return true
		case ',':
			w.i++
			continue
		}
		start := w.i
		w.skipString()
		key := w.b[start+1 : max(start+1, w.i-1)]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(w.b[start:w.i], &k) != nil {
				return true // not JSON: the decoder's to report
			}
			key = []byte(k)
		}
		w.space()
		if w.peek() == ':' {
			w.i++
		}
		if !member(key) {
			return false
		}
	}
}

// peek is the byte at w.i, 0 at the end.
func (w *keyWalk) peek() byte {
	if w.i >= len(w.b) {
		return 0
	}
	return w.b[w.i]
}

func (w *keyWalk) space() {
	for w.i < len(w.b) && (w.b[w.i] == ' ' || w.b[w.i] == '\t' || w.b[w.i] == '\r' || w.b[w.i] == '\n') {
		w.i++
	}
}

// skipString moves past the string whose opening quote is at w.i.
func (w *keyWalk) skipString() {
	for w.i++; w.i < len(w.b); w.i++ {
		switch w.b[w.i] {
		case '\\':
			w.i++
		case '"':
			w.i++
			return
		}
	}
}

// skip moves past one value.
func (w *keyWalk) skip() {
	switch w.peek() {
	case '"':
		w.skipString()
		return
	case '{', '[':
		depth := 0
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case '"':
				w.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					w.i++
					return
				}
			}
			w.i++
		}
		return
	}
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return
		}
		w.i++
	}
}
