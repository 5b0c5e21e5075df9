package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseQueryNamesTheParameter(t *testing.T) {
	cases := []struct {
		raw, field string // field "" = accepted
	}{
		{"q=pizza&lat=37.5", ""},
		{"q=%ED%94%BC%EC%9E%90&x=a+b", ""},
		{"a=1&&b=2&", ""},
		{"q=%zz", "q"},
		{"q=%e", "q"},
		{"q=pizza;sort=eta", "q"},
		{"sort=eta&q=a;b", "q"},
		{"q=a&q=b", "q"},
		{"q=a&size=3&q=a", "q"},
		{"q=%00", "q"},
		{"q=%ff%fe", "q"},
		{"q=a%00b", "q"},
		{"%zz=1", "%zz"},
		{"=1", "query"},
		{"k%00=1", "k%00"},
	}
	for _, tc := range cases {
		v, err := ParseQuery(tc.raw)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%q: %v, want accepted", tc.raw, err)
			}
			continue
		}
		p, ok := err.(*Problem)
		if !ok || p.Status != 400 || p.Field != tc.field {
			t.Errorf("%q: got %v (%+v), want a 400 naming %q", tc.raw, v, err, tc.field)
		}
	}
	v, _ := ParseQuery("x=a+b&y=%2B")
	if v.Get("x") != "a b" || v.Get("y") != "+" {
		t.Errorf("decoding: %v", v)
	}
}

func TestCheckBodyTextNamesTheJSONPath(t *testing.T) {
	cases := []struct {
		body, field string
	}{
		{`{"text":"hello 피자"}`, ""},
		{`{"text":"a\\u0000"}`, ""}, // an escaped backslash, not a NUL
		{`{"text":"a\u0000b"}`, "text"},
		{"{\"text\":\"a\xffb\"}", "text"},
		{"{\"username\":\"x\",\"profilePic\":\"\xc3\"}", "profilePic"},
		{`{"device":{"model":"x\u0000"}}`, "device.model"},
		{`[{"id":1},{"fields":{"name":"\u0000"}}]`, "[1].fields.name"},
		{"{\"id\":1}\n{\"id\":2,\"fields\":{\"tags\":[\"a\",\"\xfe\"]}}\n", "[1].fields.tags[1]"},
		{`{"id":1,"fields":{"tags":["\u0000"]}}` + "\n" + `{"id":2}`, "[0].fields.tags[0]"},
		{"{\"k\xff\":1}", "k\uFFFD"},
		{"\xff", "body"},
		{"{\"a\":\x00}", "body"},
		// A key given twice in one object, at any depth, named by its path.
		{`{"id":1,"id":2}`, "id"},
		{`{"id":1,"ID":2,"Id":3}`, ""}, // keys differ in case: UnmarshalStrict's business
		{`{"device":{"ip":"1.1.1.1","ip":"1.1.1.2"}}`, "device.ip"},
		{`{"a":{"x":1},"b":{"x":1}}`, ""}, // the same key in two objects
		{`[{"id":1},{"id":2,"fields":{"name":"a","name":"b"}}]`, "[1].fields.name"},
		{"{\"id\":1}\n{\"id\":2,\"id\":3}\n", "[1].id"},
		{`{"menus":[{"id":1},{"id":2,"price":1,"price":2}]}`, "menus[1].price"},
		{`{"a\u0062":1,"ab":2}`, "ab"}, // the same key, escaped once
		{`{"k\u0000":1,"k\u0000":2}`, `k\u0000`},
		{`{"a":1,"a":` + strings.Repeat("[", 20), "a"},       // found before the syntax error
		{`{"a":1,` + strings.Repeat("[", 20) + `"a":2}`, ""}, // a syntax error first: the decoder's
		// A surrogate escape outside a valid pair; valid pairs pass.
		{`{"name":"QA\ud800"}`, "name"},
		{`{"name":"QA\uD800x"}`, "name"},
		{`{"name":"\udc00"}`, "name"},
		{`{"name":"\ud800\ud800\udc00"}`, "name"},
		{`{"name":"\ud800\u0041"}`, "name"},
		{`{"name":"\ud83c\udf55 pizza \uD83C\uDF55"}`, ""},
		{`{"name":"\\ud800"}`, ""}, // an escaped backslash, then "ud800"
		{`{"k\udfff":1}`, "k\uFFFD"},
		{`["ok","\udbff"]`, "[1]"},
		{`"\ud800"`, "body"},
		{`{"referrer":"r\ud800"}` + "\n" + `{}`, "[0].referrer"},
	}
	for _, tc := range cases {
		err := CheckBodyText([]byte(tc.body))
		if tc.field == "" {
			if err != nil {
				t.Errorf("%q: %v, want accepted", tc.body, err)
			}
			continue
		}
		p, ok := err.(*Problem)
		if !ok || p.Status != 400 || p.Field != tc.field {
			t.Errorf("%q: got %+v, want a 400 naming %q", tc.body, err, tc.field)
		}
	}
}

type decodeTarget struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Sub   struct {
		On bool `json:"on"`
	} `json:"sub"`
	When time.Time `json:"when"`
}

func TestUnmarshalStrictNamesFieldsWithoutGoTypes(t *testing.T) {
	cases := []struct {
		body, field string
	}{
		{`{"name":"x","count":3}`, ""},
		{`[]`, "body"},
		{`"x"`, "body"},
		{`{"name":1}`, "name"},
		{`{"count":"3"}`, "count"},
		{`{"count":1.5}`, "count"},
		{`{"count":99999999999999999999}`, "count"},
		{`{"sub":{"on":"yes"}}`, "sub.on"},
		{`{"when":5}`, "when"},
		{`{"nmae":"x"}`, "nmae"},
		{`{"name":"x"} {}`, "body"},
		{`{"name":`, "body"},
		{``, "body"},
		{`{nope}`, "body"},
		{`{"name":"\u0000"}`, "name"},
	}
	for _, tc := range cases {
		var v decodeTarget
		err := UnmarshalStrict([]byte(tc.body), &v)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.body, err)
			}
			continue
		}
		p, ok := err.(*Problem)
		if !ok || p.Status != 400 || p.Field != tc.field {
			t.Errorf("%q: got %+v, want a 400 naming %q", tc.body, err, tc.field)
			continue
		}
		if strings.Contains(p.Detail, "api.") || strings.Contains(p.Detail, "Go ") || strings.Contains(p.Detail, "time.Time") || strings.Contains(p.Detail, "int64") {
			t.Errorf("%q: the detail names a Go type: %q", tc.body, p.Detail)
		}
	}
	var v decodeTarget
	p := UnmarshalStrict([]byte(`{"nmae":1}`), &v).(*Problem)
	if strings.Join(p.Allowed, ",") != "name,count,sub,when" {
		t.Errorf("allowed fields of an unknown field: %v", p.Allowed)
	}
}

// formID decodes from the string "ok" only, and describes that form.
type formID [2]byte

func (id *formID) UnmarshalText(b []byte) error {
	if string(b) != "ok" {
		return errors.New("formID.UnmarshalText: bad id")
	}
	return nil
}

func (formID) TextForm() string { return `the word "ok"` }

type shapeTarget struct {
	When   time.Time `json:"when"`
	Device struct {
		IP    netip.Addr `json:"ip"`
		Width uint32     `json:"screen_width"`
		ID    formID     `json:"advertising_id"`
	} `json:"device"`
	Items []struct {
		Price int16 `json:"price"`
	} `json:"items"`
	Tags  map[string]string `json:"tags"`
	Ratio float64           `json:"ratio"`
	On    *bool             `json:"on"`
	Raw   json.RawMessage   `json:"raw"`
}

// Every fault is named by its exact JSON path and said in JSON's words: the
// errors of UnmarshalText methods (time, IP, ids), ranges of unsigned and
// small integers, array elements, and keys spelled in another case.
func TestUnmarshalStrictPlacesEveryFault(t *testing.T) {
	cases := []struct {
		body, field, detail string // field "" = accepted
	}{
		{`{"when":"2026-11-28T09:00:00Z","device":{"ip":"203.0.113.7","screen_width":1179,"advertising_id":"ok"},"items":[{"price":1}],"tags":{"a":"b"},"ratio":0.5,"on":null,"raw":{"any":[1]}}`, "", ""},
		{`{"when":"yesterday"}`, "when", "must be an RFC 3339 timestamp such as 2026-11-28T09:00:00Z, got \"yesterday\""},
		{`{"device":{"ip":"999.1.1.1"}}`, "device.ip", "must be an IPv4 or IPv6 address"},
		{`{"device":{"ip":7}}`, "device.ip", "must be an IPv4 or IPv6 address"},
		{`{"device":{"screen_width":-1}}`, "device.screen_width", "must be an integer in 0..4294967295, got -1"},
		{`{"device":{"screen_width":4294967296}}`, "device.screen_width", "must be an integer in 0..4294967295"},
		{`{"device":{"screen_width":1.5}}`, "device.screen_width", "got 1.5"},
		{`{"device":{"advertising_id":"nope"}}`, "device.advertising_id", `must be the word "ok", got "nope"`},
		{`{"items":[{"price":1},{"price":40000}]}`, "items[1].price", "must be an integer in -32768..32767, got 40000"},
		{`{"items":[{"price":1},{"cost":1}]}`, "items[1].cost", "unknown field"},
		{`{"items":{}}`, "items", "must be an array, got an object"},
		{`{"tags":{"a":1}}`, "tags.a", "must be a string, got 1"},
		{`{"ratio":"x"}`, "ratio", "must be a number"},
		{`{"ratio":1e999}`, "ratio", "must be a number"},
		{`{"on":"yes"}`, "on", "must be true or false"},
		{`{"device":{"colour":1}}`, "device.colour", "unknown field"},
		{`{"When":"2026-11-28T09:00:00Z"}`, "When", `did you mean "when"?`},
		{`{"device":{"IP":"203.0.113.7"}}`, "device.IP", `did you mean "ip"?`},
		{`{"when":"2026-11-28T09:00:00Z","when":"2026-11-29T09:00:00Z"}`, "when", "more than once"},
		{`{} ]`, "body", "trailing data"},
		{`7`, "body", "must be an object, got 7"},
	}
	for _, tc := range cases {
		var v shapeTarget
		err := UnmarshalStrict([]byte(tc.body), &v)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v, want accepted", tc.body, err)
			}
			continue
		}
		p, ok := err.(*Problem)
		if !ok || p.Status != 400 || p.Field != tc.field || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s: got %+v, want a 400 naming %q saying %q", tc.body, err, tc.field, tc.detail)
			continue
		}
		for _, leak := range []string{"Go ", "2006", "ParseAddr", "UnmarshalText", "uint32", "int16", "netip", "time.", "json:", "formID", "api."} {
			if strings.Contains(p.Detail, leak) {
				t.Errorf("%s: the detail %q shows %q", tc.body, p.Detail, leak)
			}
		}
	}
}

func TestParseIDIsCanonicalDecimal(t *testing.T) {
	for s, want := range map[string]int64{"5": 5, "9223372036854775807": 1<<63 - 1, "10": 10} {
		if got, ok := ParseID(s, 1<<63-1); !ok || got != want {
			t.Errorf("ParseID(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "0", "+5", "007", "-1", " 5", "5 ", "0x5", "1e3", "9223372036854775808", "٣"} {
		if got, ok := ParseID(s, 1<<63-1); ok {
			t.Errorf("ParseID(%q) = %d, want refused", s, got)
		}
	}
	if _, ok := ParseID("11", 10); ok {
		t.Error("ParseID above max accepted")
	}
	for _, s := range []string{"+1", "01", "-0", "abc", ""} {
		if _, err := ParseInt("limit", s, -5, 5); err == nil {
			t.Errorf("ParseInt(%q) accepted", s)
		}
	}
	if n, err := ParseInt("limit", "-3", -5, 5); err != nil || n != -3 {
		t.Errorf("ParseInt(-3) = %d, %v", n, err)
	}
}

// Every route gets the request-line rules before its handler runs: the
// handler here would answer 200 to anything.
func TestServerRefusesBadRequestLines(t *testing.T) {
	cfg := Defaults()
	cfg.MaxHeaderBytes = 8 << 10
	s := newTestServer(cfg)
	ran := 0
	s.Handle("GET /v1/x/{id}", func(w http.ResponseWriter, r *http.Request) error { ran++; return nil })
	s.Handle("POST /v1/x", func(w http.ResponseWriter, r *http.Request) error {
		ran++
		_, err := io.ReadAll(r.Body)
		return err
	})
	cases := []struct {
		method, target, body string
		status               int
		field                string
	}{
		{"GET", "/v1/x/1?q=%zz", "", 400, "q"},
		{"GET", "/v1/x/1?q=a;b", "", 400, "q"},
		{"GET", "/v1/x/1?q=a&q=b", "", 400, "q"},
		{"GET", "/v1/x/1?q=%00", "", 400, "q"},
		{"GET", "/v1/x/%00", "", 400, "path"},
		{"GET", "/v1/x/%ff", "", 400, "path"},
		{"GET", "/v1/x/1?q=" + strings.Repeat("a", 10<<10), "", 431, "query"},
		{"POST", "/v1/x", "{\"text\":\"\xff\"}", 400, "text"},
		{"POST", "/v1/x", `{"text":"\u0000"}`, 400, "text"},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body)))
		if rec.Code != tc.status {
			t.Errorf("%s %.60s: status %d, want %d: %s", tc.method, tc.target, rec.Code, tc.status, rec.Body)
			continue
		}
		if p := decodeProblem(t, rec); p.Field != tc.field {
			t.Errorf("%s %.60s: field %q, want %q", tc.method, tc.target, p.Field, tc.field)
		}
	}
	if ran != 0 {
		t.Errorf("the handler ran %d times on refused requests", ran)
	}
}

// A body that stops arriving is answered 408 with a problem, once the read
// timeout has passed, without the connection's error in the detail. This
// needs a real listener: the deadline is the connection's.
func TestSlowBodyIsA408Problem(t *testing.T) {
	cfg := Defaults()
	cfg.Addr = "127.0.0.1:0"
	cfg.ReadTimeout = 700 * time.Millisecond
	s := newTestServer(cfg)
	s.Handle("POST /v1/x", func(w http.ResponseWriter, r *http.Request) error {
		_, err := io.ReadAll(r.Body)
		return err
	})
	addr := runServer(t, s)

	// The server's deadline starts when it begins reading the connection,
	// which can be before Dial returns here: start the clock before Dial.
	start := time.Now()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"text\":")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	defer resp.Body.Close()
	var p Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != "application/problem+json" || p.Status != 408 {
		t.Errorf("status %d, Content-Type %q, problem %+v; want a 408 problem", resp.StatusCode, resp.Header.Get("Content-Type"), p)
	}
	if strings.Contains(p.Detail, "tcp") || strings.Contains(p.Detail, "127.0.0.1") || strings.Contains(p.Detail, "timeout") && strings.Contains(p.Detail, "i/o") {
		t.Errorf("the detail leaks the connection error: %q", p.Detail)
	}
	if took := time.Since(start); took < cfg.ReadTimeout || took > 5*time.Second {
		t.Errorf("answered after %s, want about the read timeout %s", took, cfg.ReadTimeout)
	}
}

// A request line beyond MaxHeaderBytes (but under net/http's own cap) is a
// 431 problem, not net/http's plain-text answer.
func TestLongQueryIsA431Problem(t *testing.T) {
	cfg := Defaults()
	cfg.Addr = "127.0.0.1:0"
	s := newTestServer(cfg)
	s.Handle("GET /v1/x", func(w http.ResponseWriter, r *http.Request) error { return nil })
	addr := runServer(t, s)
	resp, err := http.Get("http://" + addr + "/v1/x?q=" + strings.Repeat("a", 512<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 431 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("status %d, Content-Type %q; want a 431 problem", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func runServer(t *testing.T, s *Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- s.Run(ctx, func(a string) { addrc <- a }) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case a := <-addrc:
		return a
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return ""
}

func TestRoutesListsEveryRegisteredPattern(t *testing.T) {
	s := newTestServer(Defaults())
	ok := func(w http.ResponseWriter, r *http.Request) error { return nil }
	s.Handle("POST /b", ok)
	s.HandleAdmin("GET /a", ok)
	if got := strings.Join(s.Routes(), "|"); got != "GET /a|GET /metrics|POST /b" {
		t.Errorf("Routes() = %s", got)
	}
}

// FuzzRequestDecoding feeds arbitrary query strings and bodies to the shared
// decoding layer: it must never panic, anything it accepts must be valid
// text without NUL, and every refusal must be a 4xx problem naming a field.
//
//	go test ./api -run '^$' -fuzz FuzzRequestDecoding -fuzztime 30s
func FuzzRequestDecoding(f *testing.F) {
	f.Add("q=pizza&lat=37.5", []byte(`{"name":"x","count":3}`))
	f.Add("q=%zz;x", []byte("{\"name\":\"\xff\"}"))
	f.Add("a=1&a=2", []byte(`[{"a":"\u0000"},{}]`))
	f.Add("", []byte(`{"sub":{"on":"yes"}}`))
	f.Add("", []byte(`{"name":"a","name":"b"}`))
	f.Add("", []byte(`{"sub":{"on":true,"on":false}}`))
	f.Add("", []byte(`{"name":"QA\ud800"}`))
	f.Add("", []byte(`{"name":"\ud83c\udf55\udc00"}`))
	f.Add("", []byte(`{"Name":"x","count":1}`))
	f.Add("", []byte(`{"when":"2026-11-28T09:00:00Z","device":{"ip":"203.0.113.7","IP":"203.0.113.8"},"items":[{"price":1},{"Price":2}],"tags":{"A":"b"},"raw":{"X":1}}`))
	f.Add("", []byte(`{"items":[{"price":1},{"price":"x"}],"device":{"advertising_id":"nope"}}`))
	f.Add("", []byte(`{"when":"yesterday"}`))
	f.Add("", []byte(`[{"a":1,"b":{"a":1,"a":2}}]`+"\n"+`{"x":"\uDBFF\uDFFF"}`))
	f.Fuzz(func(t *testing.T, rawQuery string, body []byte) {
		v, err := ParseQuery(rawQuery)
		checkRefusal(t, err)
		for k, vs := range v {
			if len(vs) != 1 || textProblem(k) != "" || textProblem(vs[0]) != "" {
				t.Fatalf("accepted %q as %q=%q", rawQuery, k, vs)
			}
			if std, err := url.ParseQuery(rawQuery); err == nil && std.Get(k) != vs[0] {
				t.Fatalf("%q: %s=%q, url.ParseQuery says %q", rawQuery, k, vs[0], std.Get(k))
			}
		}
		var target decodeTarget
		err = UnmarshalStrict(body, &target)
		checkRefusal(t, err)
		if err == nil && (textProblem(target.Name) != "") {
			t.Fatalf("accepted %q with name %q", body, target.Name)
		}
		// The cheap key walk of a decoded body agrees with the full one.
		var st shapeTarget
		if json.Unmarshal(body, &st) == nil {
			shape := reflect.TypeFor[shapeTarget]()
			if exact, fault := keysMatchExactly(body, shape), checkShape("", body, shape); exact != (fault == nil) {
				t.Fatalf("%q: keysMatchExactly says %v, checkShape %+v", body, exact, fault)
			}
		}
		err = CheckBodyText(body)
		checkRefusal(t, err)
		if err == nil {
			if key, ok := duplicateKey(body); ok {
				t.Fatalf("CheckBodyText accepted %q, whose key %q is given twice", body, key)
			}
			if s, ok := replacedString(body); ok {
				t.Fatalf("CheckBodyText accepted %q, whose string %q decodes with a U+FFFD the body does not hold", body, s)
			}
		}
	})
}

// duplicateKey is a reference for CheckBodyText: the first key given twice
// in one object, found by encoding/json's tokens, in the JSON values of body
// up to the first syntax error.
func duplicateKey(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object, wantsKey bool
		keys             map[string]bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].wantsKey = true
				}
				stack = append(stack, frame{object: d == '{', wantsKey: d == '{', keys: map[string]bool{}})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if len(stack) == 0 {
			continue
		}
		f := &stack[len(stack)-1]
		if !f.object {
			continue
		}
		if f.wantsKey {
			key := tok.(string)
			if f.keys[key] {
				return key, true
			}
			f.keys[key], f.wantsKey = true, false
		} else {
			f.wantsKey = true
		}
	}
}

// replacedString is a reference for CheckBodyText: the first string of body
// (key or value) that encoding/json decodes with a U+FFFD the body does not
// hold, as the character or its escape: the trace of a lone surrogate.
func replacedString(body []byte) (string, bool) {
	if bytes.ContainsRune(body, utf8.RuneError) || bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`)) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, utf8.RuneError) {
			return s, true
		}
	}
}

func checkRefusal(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	p, ok := err.(*Problem)
	if !ok || p.Status < 400 || p.Status > 499 || p.Field == "" {
		t.Fatalf("refusal %#v is not a 4xx problem naming a field", err)
	}
	if strings.Contains(p.Detail, "Go ") || strings.Contains(p.Detail, "api.") {
		t.Fatalf("refusal names a Go type: %q", p.Detail)
	}
}
