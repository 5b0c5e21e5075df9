package openapitest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/api/openapitest"
)

// The embedded document is a valid OpenAPI 3.1 document whose every
// operation declares the statuses the shared input rules can answer.
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi %q, want 3.1.x", spec.Doc.OpenAPI)
	}
	for _, err := range spec.CheckStatuses() {
		t.Error(err)
	}
	if got := spec.Routes(); len(got) < 30 {
		t.Errorf("only %d routes documented: %v", len(got), got)
	}
}

// CheckRoutes names each route missing from the document, and each
// documented one the server lacks.
func TestCheckRoutesNamesTheRoute(t *testing.T) {
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	registered := append(spec.Routes()[1:], "GET /v1/not-documented/{id}")
	errs := spec.CheckRoutes(registered)
	if len(errs) != 2 {
		t.Fatalf("got %d errors, want 2: %v", len(errs), errs)
	}
	want0 := `route "GET /v1/not-documented/{id}" is registered but has no operation in api/openapi.json: add paths["/v1/not-documented/{id}"].get (with x-go-pattern if the OpenAPI path differs from the pattern)`
	if errs[0].Error() != want0 {
		t.Errorf("missing route:\n got %s\nwant %s", errs[0], want0)
	}
	want1 := `api/openapi.json documents route "` + spec.Routes()[0] + `", which the server does not register: remove it, or register the route`
	if errs[1].Error() != want1 {
		t.Errorf("extra route:\n got %s\nwant %s", errs[1], want1)
	}
}

// GET /openapi.json serves the embedded document, and the Transport
// validates both it and a problem answer against the document.
func TestServeOpenAPIThroughTheValidatingTransport(t *testing.T) {
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Defaults(), nil, prometheus.NewRegistry())
	srv.Handle("GET /openapi.json", api.ServeOpenAPI)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var checked int
	client := &http.Client{Transport: &openapitest.Transport{Spec: spec, Check: func(x openapitest.Exchange, reqErr, respErr error) {
		checked++
		if respErr != nil {
			t.Errorf("%s %s: response: %v", x.Request.Method, x.Request.URL, respErr)
		}
		if wantValid := x.Response.StatusCode < 400; (reqErr == nil) != wantValid {
			t.Errorf("%s %s: request valid=%v, want %v: %v", x.Request.Method, x.Request.URL, reqErr == nil, wantValid, reqErr)
		}
	}}}

	resp, err := client.Get(ts.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 || doc["openapi"] != "3.1.0" {
		t.Fatalf("GET /openapi.json: %d, openapi %v, err %v", resp.StatusCode, doc["openapi"], err)
	}
	resp.Body.Close()

	resp, err = client.Get(ts.URL + "/openapi.json?pretty=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("GET /openapi.json?pretty=1: %d %s, want a 400 problem", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if checked != 2 {
		t.Errorf("the transport checked %d exchanges, want 2", checked)
	}
}

// An admin route of a server without an admin token answers 403, and one
// asked without a token 401 with WWW-Authenticate: both as the document
// says (the full server's tests run with a token, so 403 is checked here).
func TestAdminProblemsMatchTheDocument(t *testing.T) {
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		token  string
		send   string
		status int
	}{
		{token: "", send: "Bearer whatever-token-here", status: http.StatusForbidden},
		{token: "a-token-of-sixteen-bytes", send: "", status: http.StatusUnauthorized},
		{token: "a-token-of-sixteen-bytes", send: "Bearer wrong-token-of-sixteen", status: http.StatusUnauthorized},
	} {
		cfg := api.Defaults()
		cfg.AdminToken = c.token
		srv := api.New(cfg, nil, prometheus.NewRegistry())
		srv.HandleAdmin("GET /v1/admin/replicas", func(w http.ResponseWriter, r *http.Request) error {
			t.Error("the handler ran")
			return nil
		})
		ts := httptest.NewServer(srv)
		client := &http.Client{Transport: &openapitest.Transport{Spec: spec, Check: func(x openapitest.Exchange, reqErr, respErr error) {
			if respErr != nil {
				t.Errorf("token %q, sent %q: the %d response does not match: %v", c.token, c.send, x.Response.StatusCode, respErr)
			}
		}}}
		req, _ := http.NewRequest("GET", ts.URL+"/v1/admin/replicas", nil)
		if c.send != "" {
			req.Header.Set("Authorization", c.send)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("token %q, sent %q: status %d, want %d", c.token, c.send, resp.StatusCode, c.status)
		}
		ts.Close()
	}
}
