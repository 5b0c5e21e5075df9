package linkstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
)

const testAdminToken = "test-admin-token-0123456789"

func newTestAPI(t *testing.T, svc *Service) *api.Server {
	cfg := api.Defaults()
	cfg.AdminToken = testAdminToken
	s := api.New(cfg, nil, prometheus.NewRegistry())
	RegisterRoutes(s, svc)
	return s
}

func do(t *testing.T, s http.Handler, method, path, body string, admin bool) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if admin {
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) api.Problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json (status %d, body %s)", ct, rec.Code, rec.Body)
	}
	var p api.Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func recordJSON(t *testing.T, rec *Record) string {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHTTPClickLifecycle(t *testing.T) {
	rdb := testRedis(t)
	svc, _, _ := newMigration(t, rdb, DefaultServiceConfig())
	s := newTestAPI(t, svc)
	rec := liveRecords(testSeed, 1)[0]

	resp := do(t, s, "POST", "/v1/clicks", recordJSON(t, &rec), false)
	if resp.Code != http.StatusCreated {
		t.Fatalf("POST: %d %s", resp.Code, resp.Body)
	}
	var created struct {
		ClickID string `json:"click_id"`
	}
	json.Unmarshal(resp.Body.Bytes(), &created)
	if created.ClickID != rec.ClickID.String() {
		t.Fatalf("POST returned id %q, want %s", created.ClickID, rec.ClickID)
	}

	resp = do(t, s, "GET", "/v1/clicks/"+created.ClickID, "", false)
	var got struct {
		Record   Record `json:"record"`
		Consumed bool   `json:"consumed"`
	}
	if resp.Code != 200 || json.Unmarshal(resp.Body.Bytes(), &got) != nil {
		t.Fatalf("GET: %d %s", resp.Code, resp.Body)
	}
	want := rec.Normalized()
	got.Record = got.Record.Normalized()
	assertRecordEqual(t, &want, &got.Record)
	if got.Consumed {
		t.Fatal("fresh click reads as consumed")
	}

	for i, wantAlready := range []bool{false, true} {
		resp = do(t, s, "POST", "/v1/clicks/"+created.ClickID+"/resolve", "", false)
		var res resolveResponse
		if resp.Code != 200 || json.Unmarshal(resp.Body.Bytes(), &res) != nil {
			t.Fatalf("resolve #%d: %d %s", i+1, resp.Code, resp.Body)
		}
		if res.DeepLinkURL != rec.DeepLinkURL || !res.Consumed || res.AlreadyConsumed != wantAlready {
			t.Fatalf("resolve #%d: %+v, want deep link %q already_consumed %v", i+1, res, rec.DeepLinkURL, wantAlready)
		}
	}

	// A click without an id gets one.
	noID := rec
	noID.ClickID = ClickID{}
	resp = do(t, s, "POST", "/v1/clicks", strings.Replace(recordJSON(t, &noID), `"click_id":"00000000-0000-0000-0000-000000000000",`, "", 1), false)
	if resp.Code != http.StatusCreated || !strings.Contains(resp.Body.String(), `"click_id":"`) {
		t.Fatalf("POST without click_id: %d %s", resp.Code, resp.Body)
	}
}

func TestHTTPBadInput(t *testing.T) {
	rdb := testRedis(t)
	svc, _, _ := newMigration(t, rdb, DefaultServiceConfig())
	s := newTestAPI(t, svc)
	good := liveRecords(testSeed, 1)[0]
	noDeepLink := good
	noDeepLink.DeepLinkURL = ""
	relative := good
	relative.FallbackURL = "/just/a/path"
	cases := []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"bad uuid", "GET", "/v1/clicks/not-a-uuid", "", 400, "id"},
		{"bad uuid resolve", "POST", "/v1/clicks/1234/resolve", "", 400, "id"},
		{"unknown click", "GET", "/v1/clicks/" + NewClickID().String(), "", 404, ""},
		{"unknown click resolve", "POST", "/v1/clicks/" + NewClickID().String() + "/resolve", "", 404, ""},
		{"empty body", "POST", "/v1/clicks", "", 400, "body"},
		{"not json", "POST", "/v1/clicks", "{nope", 400, "body"},
		{"missing deep link", "POST", "/v1/clicks", recordJSON(t, &noDeepLink), 400, "deep_link_url"},
		{"relative fallback", "POST", "/v1/clicks", recordJSON(t, &relative), 400, "fallback_url"},
		{"unknown field", "POST", "/v1/clicks", `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","colour":"red"}`, 400, "colour"},
		{"wrong type", "POST", "/v1/clicks", `{"deep_link_url":7}`, 400, "deep_link_url"},
		{"bad click_id", "POST", "/v1/clicks", `{"click_id":"xyz","deep_link_url":"baedal://x"}`, 400, "click_id"},
		{"two objects", "POST", "/v1/clicks", `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z"} {}`, 400, "body"},
		{"oversize", "POST", "/v1/clicks", `{"referrer":"` + strings.Repeat("a", MaxClickBodyBytes) + `"}`, 413, "body"},
	}
	for _, tc := range cases {
		resp := do(t, s, tc.method, tc.path, tc.body, false)
		if resp.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.Code, tc.status, resp.Body)
			continue
		}
		if p := problemOf(t, resp); p.Field != tc.field {
			t.Errorf("%s: problem field %q, want %q (%s)", tc.name, p.Field, tc.field, p.Detail)
		}
	}
}

func TestHTTPMigrationAdmin(t *testing.T) {
	rdb := testRedis(t)
	svc, _, _ := newMigration(t, rdb, DefaultServiceConfig())
	s := newTestAPI(t, svc)
	if resp := do(t, s, "GET", "/v1/admin/links/migration", "", false); resp.Code != http.StatusUnauthorized {
		t.Fatalf("GET without token: %d", resp.Code)
	}
	resp := do(t, s, "PUT", "/v1/admin/links/migration", `{"mode":"sideways"}`, true)
	if resp.Code != 400 {
		t.Fatalf("PUT bad mode: %d %s", resp.Code, resp.Body)
	}
	if p := problemOf(t, resp); p.Field != "mode" || !slices.Equal(p.Allowed, modeNames()) {
		t.Fatalf("PUT bad mode problem %+v, want field mode and allowed %v", p, modeNames())
	}
	resp = do(t, s, "PUT", "/v1/admin/links/migration", `{"mode":"new-only"}`, true)
	if resp.Code != http.StatusConflict {
		t.Fatalf("PUT skipping steps: %d %s", resp.Code, resp.Body)
	}
	if p := problemOf(t, resp); !slices.Equal(p.Allowed, []string{"dual-write"}) {
		t.Fatalf("409 allowed %v, want [dual-write]", p.Allowed)
	}
	resp = do(t, s, "PUT", "/v1/admin/links/migration", `{"mode":"dual-write"}`, true)
	var state migrationResponse
	if resp.Code != 200 || json.Unmarshal(resp.Body.Bytes(), &state) != nil || state.Mode != ModeDualWrite {
		t.Fatalf("PUT dual-write: %d %s", resp.Code, resp.Body)
	}
	if !slices.Equal(state.AllowedNext, []Mode{ModeOldOnly, ModeShadowRead}) {
		t.Fatalf("allowed next %v", state.AllowedNext)
	}
	if got, _ := rdb.Get(context.Background(), svc.modeKey()).Result(); got != "dual-write" {
		t.Fatalf("mode in Redis %q, want dual-write", got)
	}
}

// FuzzDecodeClickRequest: any body gives either a valid record or a 4xx
// problem naming a field; never a panic or a 5xx.
//
//	go test ./linkstore -run='^$' -fuzz='^FuzzDecodeClickRequest$' -fuzztime=20s
func FuzzDecodeClickRequest(f *testing.F) {
	for _, r := range Generate(testSeed, 3) {
		b, _ := json.Marshal(r)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"ip":"fe80::1%eth0"}}`))
	f.Add([]byte(`{"click_id":"zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz"}`))
	f.Add([]byte(`{"sub_params":{"a":"\udc00"},"deep_link_url":"x:y","clicked_at":"2025-01-01T00:00:00Z"}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rec, err := DecodeClickRequest(bytes.NewReader(body), 4096)
		if err != nil {
			var p *api.Problem
			if !errors.As(err, &p) || p.Status < 400 || p.Status > 499 || (p.Status == 400 && p.Field == "") {
				t.Fatalf("error %v is not a 4xx problem naming a field", err)
			}
			return
		}
		if rec.DeepLinkURL == "" || rec.ClickedAt.IsZero() {
			t.Fatalf("accepted a record without required fields: %+v", rec)
		}
		if _, err := appendProto(nil, rec, nil); err != nil {
			t.Fatalf("accepted record does not encode: %v", err)
		}
	})
}

// errReader fails the way a connection does: its error names addresses.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// The click body decoder never shows a Go type name or the connection's
// error to the client, and refuses NUL and invalid UTF-8 by field.
func TestDecodeClickRequestSaysNothingInternal(t *testing.T) {
	cases := []struct {
		name   string
		body   io.Reader
		status int
		field  string
	}{
		{"read error", io.MultiReader(strings.NewReader(`{"deep_link_url":`), errReader{errors.New("read tcp 127.0.0.1:19080->127.0.0.1:5555: connection reset by peer")}), 400, "body"},
		{"click_id a number", strings.NewReader(`{"click_id":5}`), 400, "click_id"},
		{"device an array", strings.NewReader(`{"device":[]}`), 400, "device"},
		{"NUL", strings.NewReader(`{"deep_link_url":"baedal://x\u0000","clicked_at":"2025-01-01T00:00:00Z"}`), 400, "deep_link_url"},
		{"invalid UTF-8", strings.NewReader("{\"deep_link_url\":\"baedal://x\",\"referrer\":\"\xff\",\"clicked_at\":\"2025-01-01T00:00:00Z\"}"), 400, "referrer"},
		// Issue #37: each named by its JSON path, in words a client can act on.
		{"advertising_id not a UUID", strings.NewReader(`{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"advertising_id":"nope"}}`), 400, "device.advertising_id"},
		{"clicked_at not a time", strings.NewReader(`{"deep_link_url":"baedal://x","clicked_at":"yesterday"}`), 400, "clicked_at"},
		{"device.ip not an address", strings.NewReader(`{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"ip":"999.1.1.1"}}`), 400, "device.ip"},
		{"screen_width negative", strings.NewReader(`{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"screen_width":-1}}`), 400, "device.screen_width"},
		{"unknown nested field", strings.NewReader(`{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","utm":{"colour":"x"}}`), 400, "utm.colour"},
		{"key in another case", strings.NewReader(`{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","Clicked_At":"2026-01-01T00:00:00Z"}`), 400, "Clicked_At"},
		{"key given twice", strings.NewReader(`{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"ip":"203.0.113.1","ip":"203.0.113.2"}}`), 400, "device.ip"},
		{"lone surrogate", strings.NewReader(`{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","referrer":"r\ud800"}`), 400, "referrer"},
	}
	for _, tc := range cases {
		_, err := DecodeClickRequest(tc.body, MaxClickBodyBytes)
		var p *api.Problem
		if !errors.As(err, &p) || p.Status != tc.status || p.Field != tc.field {
			t.Errorf("%s: %v, want a %d problem naming %q", tc.name, err, tc.status, tc.field)
			continue
		}
		for _, leak := range []string{"tcp", "127.0.0.1", "linkstore", "netip.", "Go ", "2006-01-02", "ParseAddr", "uint32", "JSON number", "UUID \""} {
			if strings.Contains(p.Detail, leak) {
				t.Errorf("%s: detail %q shows %q", tc.name, p.Detail, leak)
			}
		}
	}
}

// An admin body over its 4 KB cap is a 413, not a JSON error of the
// truncated body.
func TestHTTPMigrationBodyOverTheLimitIs413(t *testing.T) {
	rdb := testRedis(t)
	svc, _, _ := newMigration(t, rdb, DefaultServiceConfig())
	s := newTestAPI(t, svc)
	resp := do(t, s, "PUT", "/v1/admin/links/migration", `{"mode":"`+strings.Repeat("x", 5000)+`"}`, true)
	if resp.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413: %s", resp.Code, resp.Body)
	}
	problemOf(t, resp)
}
