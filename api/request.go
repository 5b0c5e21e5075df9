package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the request-decoding layer every route goes through: strict
// query parsing, the text rules of bodies, JSON decoding and canonical ids.
// Its functions are pure (no server), so they are table-tested and fuzzed
// without a backend.

// ParseQuery parses a raw query string strictly. Unlike url.ParseQuery, which
// r.URL.Query() uses and whose errors it drops, a parameter is never silently
// lost or chosen: bad percent-encoding, a ';' (once a separator, now a
// dropped pair), a parameter given twice, a name-less pair, and a name or
// value that is not valid UTF-8 or holds a NUL are each a 400 problem naming
// the parameter. Empty pairs ("a=1&&b=2") are skipped, as url.ParseQuery does.
func ParseQuery(raw string) (url.Values, error) {
	v := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		name := queryName(rawKey)
		if strings.Contains(pair, ";") {
			return nil, BadRequest(name, "contains ';': separate parameters with '&' and write a literal ';' as %3B")
		}
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return nil, BadRequest(name, "the parameter name has bad percent-encoding (a '%' must be followed by two hex digits)")
		}
		if key == "" {
			return nil, BadRequest("query", fmt.Sprintf("the pair %q has no parameter name", truncate(pair, 40)))
		}
		if problem := textProblem(key); problem != "" {
			return nil, BadRequest(name, "the parameter name "+problem)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, BadRequest(key, "bad percent-encoding (a '%' must be followed by two hex digits; a literal '%' is %25)")
		}
		if problem := textProblem(value); problem != "" {
			return nil, BadRequest(key, problem)
		}
		if _, dup := v[key]; dup {
			return nil, BadRequest(key, "is given more than once; give it once")
		}
		v[key] = []string{value}
	}
	return v, nil
}

// queryName is the best name of a raw parameter name for a problem: decoded
// when it decodes to valid text, else the raw form, shortened.
func queryName(rawKey string) string {
	if k, err := url.QueryUnescape(rawKey); err == nil && k != "" && textProblem(k) == "" {
		return truncate(k, 40)
	}
	if rawKey == "" {
		return "query"
	}
	return truncate(strings.ToValidUTF8(rawKey, "\uFFFD"), 40)
}

// Query returns r's query parameters parsed by ParseQuery. Which
// parameters a route takes is declared once, at registration (Params), and
// checked before its handler runs.
func Query(r *http.Request) (url.Values, error) {
	return ParseQuery(r.URL.RawQuery)
}

// CheckQueryParams applies a route's parameter rules to a raw query that
// ParseQuery accepts: a parameter not in allowed is a 400 naming it and
// listing allowed, and so is one given with an empty value ("a=" or a bare
// "a"): a parameter is either left out or given a value, never both at once.
// The first offending parameter, in the query's order, is named. It
// allocates nothing for a query without escapes.
func CheckQueryParams(raw string, allowed []string) error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawKey)
		if err != nil {
			name = queryName(rawKey) // ParseQuery refuses it first
		}
		if !slices.Contains(allowed, name) {
			if len(allowed) == 0 {
				return BadRequest(name, "unknown parameter: this route takes no query parameters")
			}
			return BadRequest(name, "unknown parameter", allowed...)
		}
		if rawValue == "" {
			return BadRequest(name, "is empty: give a value or leave the parameter out")
		}
	}
	return nil
}

// CheckPath refuses a request path that is not valid UTF-8 or holds a NUL
// (both can arrive percent-encoded): a 400 problem on the field "path".
func CheckPath(path string) error {
	if problem := textProblem(path); problem != "" {
		return BadRequest("path", "the request path "+problem)
	}
	return nil
}

// textProblem says what is wrong with s as text, or "" when nothing is.
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "contains a NUL character (U+0000), which is not allowed"
	}
	return ""
}

// CheckBodyText refuses a request body whose JSON a decoder would read
// other than as sent: text that is not valid UTF-8 or holds a NUL character,
// raw or as the JSON escape \u0000 (encoding/json would silently turn
// invalid UTF-8 into U+FFFD, and PostgreSQL refuses NUL in text), a UTF-16
// surrogate escape (\uD800 to \uDFFF) outside a valid high-low pair
// (encoding/json would store U+FFFD), and a key given twice in one object
// (encoding/json would keep the last one silently). The problem names the
// JSON path of the offending key or string ("text", "menus[2].name",
// "[3].fields.name" for the fourth value of an array or NDJSON stream,
// "device.ip" for a repeated key) when the body is JSON up to it, else
// "body". The common case is one pass over the body, with one small scratch
// allocation (scanBody).
func CheckBodyText(body []byte) error {
	path, problem, wellFormed := scanBody(body)
	switch {
	case problem != "":
		return BadRequest(path, problem)
	case wellFormed:
		return nil // the common case
	case !utf8.Valid(body):
		return BadRequest("body", "is not valid UTF-8")
	case bytes.IndexByte(body, 0) >= 0:
		return BadRequest("body", "contains a NUL byte, which is not allowed")
	}
	return nil // not JSON: the decoder says where
}

// pathKey is an object key as a path element: valid text, NUL shown escaped.
func pathKey(key []byte) string {
	s := strings.ToValidUTF8(string(key), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", `\u0000`)
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// ReadBody reads a whole request body, at most limit bytes. A larger body is
// a 413 problem, a body that stops arriving before the read deadline is a 408
// problem, and any other read failure (the client closed the connection) a
// 400 problem: none carries the internal error.
func ReadBody(body io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		var tooBig *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooBig):
			return nil, tooLarge(tooBig.Limit)
		case errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
			return nil, NewProblem(http.StatusRequestTimeout, "the request body did not arrive in time; send the whole body (Content-Length bytes) promptly")
		}
		return nil, BadRequest("body", "the request body could not be read: it ended before its declared length or the connection failed")
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(limit)
	}
	return data, nil
}

func tooLarge(limit int64) *Problem {
	p := NewProblem(http.StatusRequestEntityTooLarge, "request body is larger than the limit of "+strconv.FormatInt(limit, 10)+" bytes")
	p.Field = "body"
	return p
}

// DecodeJSON reads r's body, at most limit bytes, and decodes exactly one
// JSON object into v. Unknown fields, trailing data, wrong types and
// malformed JSON are 400 problems naming the field (see JSONProblem); a
// larger body is 413.
func DecodeJSON(r *http.Request, limit int64, v any) error {
	data, err := ReadBody(r.Body, limit)
	if err != nil {
		return err
	}
	return UnmarshalStrict(data, v)
}

// UnmarshalStrict decodes data, exactly one JSON value, into v, refusing
// what encoding/json alone would take silently: the body text rules
// (CheckBodyText: invalid UTF-8, NUL, lone surrogates, duplicate keys), a
// key that is not a field of v's type, exactly as spelled (encoding/json
// ignores letter case), and trailing data. Errors are 400 problems naming
// the JSON path of the fault ("device.ip", "items[2].price") and the form
// the value must have, in JSON's words, never a Go type, a Go layout or a
// library's message (checkShape, JSONProblem). A body the server took
// has passed CheckBodyText already; it runs again here for callers outside
// the server (the CLI reads the same JSON from files).
func UnmarshalStrict(data []byte, v any) error {
	if err := CheckBodyText(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return JSONProblem(err, v)
	}
	if err == nil {
		if _, after := dec.Token(); after != io.EOF {
			return BadRequest("body", "must hold exactly one JSON value; got trailing data")
		}
	}
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		if err != nil {
			return JSONProblem(err, v)
		}
		return nil
	}
	// The value is JSON. A success needs one more look, cheap, since
	// encoding/json takes keys in any letter case; a failure is placed by
	// walking the value against v's type (checkShape).
	first := json.RawMessage(data)
	if err == nil {
		if keysMatchExactly(data, t.Elem()) {
			return nil
		}
	} else if json.NewDecoder(bytes.NewReader(data)).Decode(&first) != nil {
		return JSONProblem(err, v)
	}
	if f := checkShape("", first, t.Elem()); f != nil {
		if f.path == "" {
			f.path = "body"
		}
		return BadRequest(f.path, f.detail, f.allowed...)
	}
	if err != nil {
		return JSONProblem(err, v)
	}
	return nil
}

// JSONProblem turns an encoding/json decoding error into a 400 problem that
// names the field and says what JSON it wants, in JSON's words: never a Go
// type name or a library's message. v, the decoding target, lists the
// allowed fields of an unknown field; it may be nil. encoding/json does not
// name the field of every error, nor array indices: UnmarshalStrict places
// those with checkShape first.
func JSONProblem(err error, v any) *Problem {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		if typeErr.Type == nil {
			return BadRequest(field, "has the wrong JSON kind: got "+describeTypeErrorValue(typeErr.Value))
		}
		return BadRequest(field, "must be "+wantedForm(typeErr.Type)+", got "+describeTypeErrorValue(typeErr.Value))
	case errors.As(err, &syntaxErr):
		return BadRequest("body", fmt.Sprintf("malformed JSON at byte %d: %s", syntaxErr.Offset, strings.TrimPrefix(syntaxErr.Error(), "json: ")))
	case errors.Is(err, io.EOF):
		return BadRequest("body", "empty body: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return BadRequest("body", "truncated JSON: the body ends inside a value")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if name == "" {
			name = "body"
		}
		return BadRequest(name, "unknown field", JSONFields(v)...)
	}
	// An UnmarshalJSON or UnmarshalText method failed where checkShape
	// found nothing: its words are Go's, so say only what failed.
	return BadRequest("body", "a value does not have the form its field takes")
}

// describeTypeErrorValue renders json.UnmarshalTypeError.Value ("number -1",
// "string", "bool") in a problem's words: "-1", "a string", "a boolean".
func describeTypeErrorValue(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return truncate(n, 40)
	}
	switch v {
	case "string", "number":
		return "a " + v
	case "bool":
		return "a boolean"
	case "array", "object":
		return "an " + v
	}
	return "another JSON value"
}

var textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()

// JSONFields lists the JSON names of the top-level fields of the struct v
// points to (nil for anything else), in declaration order.
func JSONFields(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for _, f := range jsonStructFields(t) {
		out = append(out, f.name)
	}
	return out
}

// ParseID parses an id written the canonical way: decimal digits with no
// sign, no leading zero, no spaces, in 1..max. "+5", "007", "5 " and "0x5"
// are refused, so one id has exactly one spelling (in URLs and caches too).
func ParseID(s string, max int64) (int64, bool) {
	if s == "" || len(s) > 19 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > max {
		return 0, false
	}
	return n, true
}

// ParseInt parses an integer written the canonical way (an optional '-',
// then digits without a leading zero; "0" itself) in lo..hi. A problem
// names the parameter and the range.
func ParseInt(name, s string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s || n < lo || n > hi {
		return 0, BadRequest(name, fmt.Sprintf("must be an integer in %d..%d written in plain decimal, got %q", lo, hi, truncate(s, 40)))
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
