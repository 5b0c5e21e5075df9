package api

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckBodyMediaType(t *testing.T) {
	cases := []struct {
		contentType, contentEncoding string // "-" = not sent
		accepted                     []string
		field                        string // "" = accepted
	}{
		{"application/json", "-", []string{MediaTypeJSON}, ""},
		{"-", "-", []string{MediaTypeJSON}, ""}, // no Content-Type: taken as the route's type
		{"application/json; charset=utf-8", "-", []string{MediaTypeJSON}, ""},
		{"Application/JSON; Charset=UTF-8", "-", []string{MediaTypeJSON}, ""},
		{"application/json", "identity", []string{MediaTypeJSON}, ""},
		{"application/x-ndjson", "-", []string{MediaTypeJSON, MediaTypeNDJSON}, ""},
		{"application/x-ndjson", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"application/xml", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"text/plain", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"application/x-www-form-urlencoded", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"multipart/form-data; boundary=x", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"application/problem+json", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"application/json; charset=latin1", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"application/json; version=2", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"application/", "-", []string{MediaTypeJSON}, "Content-Type"},
		{"application/json", "gzip", []string{MediaTypeJSON}, "Content-Encoding"},
		{"application/json", "br", []string{MediaTypeJSON}, "Content-Encoding"},
		{"application/json", "identity, gzip", []string{MediaTypeJSON}, "Content-Encoding"},
		{"-", "deflate", []string{MediaTypeJSON}, "Content-Encoding"},
	}
	for _, tc := range cases {
		h := http.Header{}
		if tc.contentType != "-" {
			h.Set("Content-Type", tc.contentType)
		}
		if tc.contentEncoding != "-" {
			h.Set("Content-Encoding", tc.contentEncoding)
		}
		err := CheckBodyMediaType(h, tc.accepted...)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%q %q: %v, want accepted", tc.contentType, tc.contentEncoding, err)
			}
			continue
		}
		p, ok := err.(*Problem)
		if !ok || p.Status != http.StatusUnsupportedMediaType || p.Field != tc.field || len(p.Allowed) == 0 {
			t.Errorf("%q %q: got %+v, want a 415 naming %q and what it takes", tc.contentType, tc.contentEncoding, err, tc.field)
		}
	}
	h := http.Header{"Content-Type": {"application/json", "application/json"}}
	if p, ok := CheckBodyMediaType(h, MediaTypeJSON).(*Problem); !ok || p.Status != 415 {
		t.Errorf("Content-Type given twice: %v, want a 415", p)
	}
}

// A route that takes a body refuses one it cannot read as sent with a 415
// problem before the body's text is checked (a gzip body is not UTF-8) and
// before its handler runs; the answer says what it would read. Routes that
// take no body, and empty bodies, are not concerned.
func TestServerRefusesBodiesItCannotRead(t *testing.T) {
	s := newTestServer(Defaults())
	ran := 0
	ok := func(w http.ResponseWriter, r *http.Request) error {
		ran++
		_, err := io.ReadAll(r.Body)
		return err
	}
	s.Handle("POST /v1/things", ok, Body(MediaTypeJSON))
	s.Handle("POST /v1/events", ok, Body(MediaTypeJSON, MediaTypeNDJSON))
	s.HandleAdmin("PUT /v1/admin/x", ok, Body(MediaTypeJSON))
	s.Handle("POST /v1/things/{id}/touch", ok)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, `{"name":"x"}`)
	zw.Close()
	cases := []struct {
		target, body, contentType, contentEncoding string
		status                                     int
		field, accept, acceptEncoding              string
	}{
		{"/v1/things", `{"name":"x"}`, "application/json", "", 200, "", "", ""},
		{"/v1/things", `{"name":"x"}`, "", "", 200, "", "", ""},
		{"/v1/things", `{"name":"x"}`, "application/xml", "", 415, "Content-Type", "application/json", ""},
		{"/v1/things", "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n{}\r\n--x--\r\n", "multipart/form-data; boundary=x", "", 415, "Content-Type", "application/json", ""},
		{"/v1/things", zipped.String(), "application/json", "gzip", 415, "Content-Encoding", "", "identity"},
		{"/v1/things", `{"name":"x"}`, "application/json", "gzip", 415, "Content-Encoding", "", "identity"},
		{"/v1/things", "", "application/xml", "gzip", 200, "", "", ""}, // no body: nothing to misread
		{"/v1/events", "{}\n{}\n", "application/x-ndjson", "", 200, "", "", ""},
		{"/v1/events", "{}\n{}\n", "text/csv", "", 415, "Content-Type", "application/json, application/x-ndjson", ""},
		{"/v1/admin/x", `{}`, "text/plain", "", 403, "", "", ""}, // the admin check first
		{"/v1/things/1/touch", "<a/>", "application/xml", "", 200, "", "", ""},
		{"/v1/things", `{"name":"a","name":"b"}`, "application/json", "", 400, "name", "", ""},
	}
	for _, tc := range cases {
		req := httptest.NewRequest("POST", tc.target, strings.NewReader(tc.body))
		if strings.HasPrefix(tc.target, "/v1/admin/") {
			req.Method = "PUT"
		}
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		if tc.contentEncoding != "" {
			req.Header.Set("Content-Encoding", tc.contentEncoding)
		}
		ranBefore := ran
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		name := tc.target + " " + tc.contentType + " " + tc.contentEncoding
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", name, rec.Code, tc.status, rec.Body)
			continue
		}
		if tc.status < 400 {
			continue
		}
		if ran != ranBefore {
			t.Errorf("%s: the handler ran on a refused request", name)
		}
		if p := decodeProblem(t, rec); p.Field != tc.field {
			t.Errorf("%s: field %q, want %q (%s)", name, p.Field, tc.field, p.Detail)
		}
		if got := rec.Header().Get("Accept"); got != tc.accept {
			t.Errorf("%s: Accept %q, want %q", name, got, tc.accept)
		}
		if got := rec.Header().Get("Accept-Encoding"); got != tc.acceptEncoding {
			t.Errorf("%s: Accept-Encoding %q, want %q", name, got, tc.acceptEncoding)
		}
	}
}
