package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/baedal/baedal/api/openapitest"
	"github.com/baedal/baedal/internal/stacktest"
)

// This file holds the property check that api/openapi.json and the server
// agree on which requests are valid, in the manner of schemathesis: from
// each operation's schemas it generates requests (each parameter and body
// field at its boundaries: minimum, maximum, one past each, empty, blank,
// the wrong type, a value off the enum, a required one missing, an extra
// one), asks the document whether it accepts each (openapitest, as every
// other test does), sends it, and requires the server to serve exactly the
// requests the document accepts and to refuse (400) exactly those it
// refuses.

// agreementBase is an operation's valid request, from which the check
// generates the others.
type agreementBase struct {
	// path is the request path with its parameters filled in (ids of
	// stored users, posts, clicks).
	path string
	// query is a valid query, in order ("lat=37.5&lon=127").
	query string
	// body is a valid JSON body; nil sends none.
	body map[string]any
	// bodyFrom names body paths ("fields") whose schema in the document
	// is not the property's own (an event's fields is ShopFields by an
	// if/then of the document): the values are generated from these.
	bodyFrom map[string]string
	// stateful names body paths and parameters that refer to stored
	// entities ("authorId"): of their generated values only those the
	// document refuses are sent, so the check writes nothing on others'
	// data (user 1's posts). Path parameters of writes are stateful too.
	stateful []string
	// acrossFields names body paths and parameters under a rule across
	// fields or on state that JSON Schema cannot state, and that the
	// document gives in prose (a shop event's shop_id equals its id): a
	// value the document accepts may be refused. Each says the rule.
	acrossFields map[string]string
	// skipBody: the body is not generated (starting a reindex job per
	// accepted body would copy an index each time); baseRefused: the base
	// request is one the server refuses for a reason JSON Schema cannot
	// state, said here (then only its refused variants are checked).
	skipBody, baseRefused string
}

// TestOpenAPIAgreesWithTheServer checks, operation by operation, that the
// server takes the query parameters the document declares and no other,
// and that of the requests generated from the document's schemas the
// server serves those the document accepts and refuses with a 400 those it
// refuses. A disagreement names the request, the document's verdict and
// the server's answer: fix the document or the server so they agree.
func TestOpenAPIAgreesWithTheServer(t *testing.T) {
	st := stacktest.Require(t)
	spec := loadSpec(t)
	cfg := fullServerConfig(t, st)
	cfg.Workers = false
	var declared map[string][]string
	cfg.onQueryParams = func(p map[string][]string) { declared = p }
	addr := serve(t, cfg)
	base := "http://" + addr

	// The document declares the query parameters each route takes.
	for _, op := range spec.Operations() {
		var doc []string
		for _, p := range append(slices.Clone(op.Op.Parameters), spec.Doc.Paths.Find(op.Path).Parameters...) {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				doc = append(doc, p.Value.Name)
			}
		}
		server, ok := declared[op.Pattern]
		if !ok {
			t.Errorf("%s %s: the server registers no route %q", op.Method, op.Path, op.Pattern)
			continue
		}
		slices.Sort(doc)
		server = slices.Sorted(slices.Values(server))
		if !slices.Equal(doc, server) {
			t.Errorf("%s %s: the document declares the query parameters %q, the server takes %q", op.Method, op.Path, doc, server)
		}
	}

	// Stored entities the paths name.
	ag := &agreementClient{t: t, spec: spec, base: base, token: cfg.API.AdminToken,
		httpc: &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	suffix := strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 36)
	var alice, bob, post struct{ ID int64 }
	ag.mustJSON("POST", "/v1/users", `{"username":"agree_a`+suffix+`"}`, &alice)
	ag.mustJSON("POST", "/v1/users", `{"username":"agree_b`+suffix+`"}`, &bob)
	ag.mustJSON("POST", "/v1/posts", fmt.Sprintf(`{"authorId":%d,"text":"agreement"}`, alice.ID), &post)
	var click struct {
		ClickID string `json:"click_id"`
	}
	ag.mustJSON("POST", "/v1/clicks", `{"deep_link_url":"baedal://shop/1","clicked_at":"2025-01-01T00:00:00Z"}`, &click)
	a, b, p := strconv.FormatInt(alice.ID, 10), strconv.FormatInt(bob.ID, 10), strconv.FormatInt(post.ID, 10)
	shopID := 5_000_000 + time.Now().UnixNano()%1_000_000

	bases := map[string]agreementBase{
		"GET /v1/search": {path: "/v1/search", query: "lat=37.4979&lon=127.0276&size=1",
			acrossFields: map[string]string{"lat": "lat and lon come together", "lon": "lat and lon come together"}},
		"POST /v1/events": {path: "/v1/events", body: map[string]any{"type": "shop", "id": shopID, "version": 1, "op": "upsert",
			"fields": map[string]any{"name": "합의 피자", "location": map[string]any{"lat": 37.5, "lon": 127.0}}},
			bodyFrom:     map[string]string{"fields": "ShopFields"},
			acrossFields: map[string]string{"shop_id": "a shop event's shop_id is absent or equal to its id"}},
		"GET /v1/admin/dead-letters":              {path: "/v1/admin/dead-letters", query: "limit=10"},
		"POST /v1/admin/dead-letters/{id}/replay": {path: "/v1/admin/dead-letters/1-0/replay", stateful: []string{"id"}},
		"DELETE /v1/admin/dead-letters/{id}":      {path: "/v1/admin/dead-letters/1-0", stateful: []string{"id"}},
		"GET /admin/reindex":                      {path: "/admin/reindex"},
		"POST /admin/reindex": {path: "/admin/reindex", body: map[string]any{"alias": "no-such-alias"},
			skipBody: "each accepted body would start a reindex job", baseRefused: "alias is one of the server's reindexable aliases"},
		"GET /admin/reindex/{id}":                {path: "/admin/reindex/nojob"},
		"POST /admin/reindex/{id}/{action}":      {path: "/admin/reindex/nojob/pause", stateful: []string{"id"}},
		"GET /v1/admin/replicas":                 {path: "/v1/admin/replicas"},
		"GET /v1/admin/opensearch-endpoints":     {path: "/v1/admin/opensearch-endpoints"},
		"POST /v1/users":                         {path: "/v1/users", body: map[string]any{"username": "agree_c" + suffix, "profilePic": "https://img.example/a.png"}},
		"GET /v1/users/{id}":                     {path: "/v1/users/" + a},
		"PUT /v1/users/{id}/follows/{target}":    {path: "/v1/users/" + b + "/follows/" + a, stateful: []string{"id", "target"}},
		"DELETE /v1/users/{id}/follows/{target}": {path: "/v1/users/" + b + "/follows/" + a, stateful: []string{"id", "target"}},
		"POST /v1/posts":                         {path: "/v1/posts", body: map[string]any{"authorId": alice.ID, "text": "합의"}, stateful: []string{"authorId"}},
		"GET /v1/posts/{id}":                     {path: "/v1/posts/" + p},
		"GET /v1/posts/{id}/fanout":              {path: "/v1/posts/" + p + "/fanout"},
		"GET /v1/users/{id}/feed":                {path: "/v1/users/" + b + "/feed", query: "limit=5"},
		"GET /v1/users/{id}/feed/strategies":     {path: "/v1/users/" + b + "/feed/strategies", query: "limit=5"},
		"GET /api/v1/feeds":                      {path: "/api/v1/feeds", query: "user-id=" + b + "&limit=5", stateful: []string{"user-id"}},
		"GET /v1/feed/example":                   {path: "/v1/feed/example"},
		"POST /api/v1/tweets":                    {path: "/api/v1/tweets", body: map[string]any{"senderId": bob.ID, "text": "합의"}, stateful: []string{"senderId"}},
		"POST /v1/clicks":                        {path: "/v1/clicks", body: map[string]any{"deep_link_url": "baedal://shop/1", "clicked_at": "2025-01-01T00:00:00Z"}, acrossFields: map[string]string{"expires_at": "expires_at lies after now and at most --links-max-lifetime ahead"}},
		"GET /v1/clicks/{id}":                    {path: "/v1/clicks/" + click.ClickID},
		"POST /v1/clicks/{id}/resolve":           {path: "/v1/clicks/" + click.ClickID + "/resolve", stateful: []string{"id"}},
		"GET /v1/admin/links/migration":          {path: "/v1/admin/links/migration"},
		"PUT /v1/admin/links/migration":          {path: "/v1/admin/links/migration", body: map[string]any{"mode": "old-only"}},
		"GET /v1/admin/links/memory":             {path: "/v1/admin/links/memory", query: "records=5"},
		"GET /livez":                             {path: "/livez"},
		"GET /healthz":                           {path: "/healthz"},
		"GET /readyz":                            {path: "/readyz"},
		"GET /metrics":                           {path: "/metrics"},
		"GET /openapi.json":                      {path: "/openapi.json"},
		"GET /":                                  {path: "/"},
		"GET /console/":                          {path: "/console/"},
		"GET /console/{file}":                    {path: "/console/app.js"},
		"GET /console/views/{file}":              {path: "/console/views/search.js"},
		"GET /console/api/meta":                  {path: "/console/api/meta"},
		"GET /console/api/ops":                   {path: "/console/api/ops"},
	}
	start := time.Now()
	for _, op := range spec.Operations() {
		key := op.Method + " " + op.Path
		bs, ok := bases[key]
		if !ok {
			t.Errorf("%s has no base request in TestOpenAPIAgreesWithTheServer: add one the server serves", key)
			continue
		}
		delete(bases, key)
		ag.checkOperation(op, bs)
	}
	for key := range bases {
		t.Errorf("TestOpenAPIAgreesWithTheServer has a base request for %s, which the document does not describe", key)
	}
	t.Logf("%d generated requests in %s: %d the document accepts, %d it refuses", ag.sent, time.Since(start).Round(time.Millisecond), ag.accepted, ag.sent-ag.accepted)
}

// agreementClient sends the generated requests and compares the verdicts.
type agreementClient struct {
	t           *testing.T
	spec        *openapitest.Spec
	base, token string
	httpc       *http.Client // follows no redirect
	sent        int
	accepted    int // of sent, those the document accepts
	failures    int
}

// agreementRequest is one generated request.
type agreementRequest struct {
	what        string // the mutation, for messages
	path, query string
	body        []byte // nil: none
	// mayRefuse: a rule across fields may refuse it though the document
	// accepts it (agreementBase.acrossFields).
	mayRefuse string
	// skipIfAccepted: it changes stored data the test does not own when
	// served, so it is sent only when the document refuses it.
	skipIfAccepted bool
}

func (c *agreementClient) newRequest(method string, r agreementRequest) *http.Request {
	target := c.base + r.path
	if r.query != "" {
		target += "?" + r.query
	}
	var body io.Reader = http.NoBody
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, target, err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return req
}

// documentAccepts asks the document whether it accepts the request.
func (c *agreementClient) documentAccepts(method string, r agreementRequest) error {
	req := c.newRequest(method, r)
	reqErr, _ := c.spec.Validate(context.Background(), openapitest.Exchange{Request: req, RequestBody: r.body,
		Response: &http.Response{StatusCode: http.StatusOK, Header: http.Header{}}})
	return reqErr
}

// mustJSON sends a request that must succeed (2xx) and decodes its answer.
func (c *agreementClient) mustJSON(method, path, body string, v any) {
	c.t.Helper()
	resp, got := c.send(c.newRequest(method, agreementRequest{path: path, body: []byte(body)}))
	if resp.StatusCode/100 != 2 {
		c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, got)
	}
	if err := json.Unmarshal(got, v); err != nil {
		c.t.Fatalf("%s %s: %v: %s", method, path, err, got)
	}
}

func (c *agreementClient) send(req *http.Request) (*http.Response, []byte) {
	c.t.Helper()
	resp, err := c.httpc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.RequestURI(), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// check sends r and compares the server's answer with the document's
// verdict.
func (c *agreementClient) check(op openapitest.Operation, r agreementRequest) {
	c.t.Helper()
	docErr := c.documentAccepts(op.Method, r)
	if docErr == nil && r.skipIfAccepted {
		return
	}
	req := c.newRequest(op.Method, r)
	resp, body := c.send(req)
	c.sent++
	if docErr == nil {
		c.accepted++
	}
	// The answer itself must be one the document declares.
	_, respErr := c.spec.Validate(context.Background(), openapitest.Exchange{Request: c.newRequest(op.Method, r), RequestBody: r.body, Response: resp, ResponseBody: body})
	refused := resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusRequestEntityTooLarge
	name := fmt.Sprintf("%s %s (%.80s; query %.80q; body %.160s)", op.Method, op.Path, r.what, r.query, r.body)
	var problem string
	switch {
	case resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable:
		problem = fmt.Sprintf("the server failed: %d %.300s", resp.StatusCode, body)
	case respErr != nil:
		problem = fmt.Sprintf("the %d answer does not match the document: %.300s\n%.300s", resp.StatusCode, firstLine(respErr), body)
	case docErr == nil && refused && r.mayRefuse == "":
		problem = fmt.Sprintf("the document accepts it, the server refuses it: %d %.300s", resp.StatusCode, body)
	case docErr != nil && !refused:
		problem = fmt.Sprintf("the document refuses it (%v), the server answers %d: %.200s", firstLine(docErr), resp.StatusCode, body)
	}
	if problem == "" {
		return
	}
	c.failures++
	if c.failures <= 80 {
		c.t.Errorf("%s: %s", name, problem)
	} else if c.failures == 81 {
		c.t.Errorf("more than 80 disagreements; the rest are not shown")
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// checkOperation generates the requests of one operation from its base.
func (c *agreementClient) checkOperation(op openapitest.Operation, bs agreementBase) {
	c.t.Helper()
	var body []byte
	if bs.body != nil {
		body = mustMarshal(c.t, bs.body)
	}
	baseReq := agreementRequest{what: "the base request", path: bs.path, query: bs.query, body: body, mayRefuse: bs.baseRefused}
	if err := c.documentAccepts(op.Method, baseReq); err != nil {
		c.t.Errorf("%s %s: the document refuses the base request %s?%s: %v", op.Method, op.Path, bs.path, bs.query, err)
		return
	}
	c.check(op, baseReq)

	params := append(slices.Clone(op.Op.Parameters), c.spec.Doc.Paths.Find(op.Path).Parameters...)
	// Query parameters: each at its boundaries, empty, bare, missing;
	// and one the operation does not declare.
	for _, v := range []string{"zz_unknown=1", "zz_unknown=", "zz_unknown"} {
		c.check(op, agreementRequest{what: "an undeclared parameter", path: bs.path, query: joinQuery(bs.query, v), body: body})
	}
	for _, ref := range params {
		p := ref.Value
		if p == nil || p.Schema == nil || p.Schema.Value == nil {
			continue
		}
		stateful := slices.Contains(bs.stateful, p.Name)
		switch p.In {
		case openapi3.ParameterInQuery:
			for _, v := range append(parameterValues(p.Schema.Value), "") {
				c.check(op, agreementRequest{what: p.Name + "=" + v, path: bs.path, query: setQuery(bs.query, p.Name, p.Name+"="+url.QueryEscape(v)),
					body: body, mayRefuse: bs.acrossFields[p.Name], skipIfAccepted: stateful})
			}
			c.check(op, agreementRequest{what: "bare " + p.Name, path: bs.path, query: setQuery(bs.query, p.Name, p.Name), body: body})
			if q := dropQuery(bs.query, p.Name); q != bs.query {
				c.check(op, agreementRequest{what: "without " + p.Name, path: bs.path, query: q, body: body,
					mayRefuse: bs.acrossFields[p.Name], skipIfAccepted: stateful})
			}
		case openapi3.ParameterInPath:
			for _, v := range parameterValues(p.Schema.Value) {
				path, ok := setPathParam(op.Path, bs.path, p.Name, v)
				if !ok {
					continue
				}
				c.check(op, agreementRequest{what: p.Name + " in the path = " + v, path: path, query: bs.query, body: body,
					skipIfAccepted: stateful || op.Method != http.MethodGet})
			}
		}
	}

	// The body: each field at its boundaries, each required one missing,
	// an undeclared one; nested objects likewise.
	if bs.body == nil || bs.skipBody != "" {
		return
	}
	schema := bodySchema(op.Op)
	if schema == nil {
		c.t.Errorf("%s %s: a base body, but the document declares no JSON body", op.Method, op.Path)
		return
	}
	for _, m := range bodyMutations(c.spec, schema, bs.body, "", bs.bodyFrom) {
		c.check(op, agreementRequest{what: m.what, path: bs.path, query: bs.query, body: mustMarshal(c.t, m.body),
			mayRefuse: bs.acrossFields[m.field], skipIfAccepted: slices.Contains(bs.stateful, m.field)})
	}
}

// bodySchema is the JSON object schema of an operation's body (the object
// branch of a oneOf), or nil.
func bodySchema(op *openapi3.Operation) *openapi3.Schema {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return nil
	}
	s := mt.Schema.Value
	for _, one := range s.OneOf {
		if one.Value != nil && one.Value.Type.Includes(openapi3.TypeObject) {
			return one.Value
		}
	}
	return s
}

// bodyMutation is one generated body and the field it varies.
type bodyMutation struct {
	what, field string
	body        map[string]any
}

// bodyMutations generates bodies from base, an object the schema accepts:
// each required field removed, an undeclared field added, each declared
// field set to each of jsonValues, and the same inside object fields.
// prefix is the path of base in the whole body; from maps a path to the
// component schema its values come from.
func bodyMutations(spec *openapitest.Spec, schema *openapi3.Schema, base map[string]any, prefix string, from map[string]string) []bodyMutation {
	var out []bodyMutation
	with := func(what, field string, change func(m map[string]any)) {
		m := cloneJSON(base)
		change(m)
		out = append(out, bodyMutation{what: what, field: field, body: m})
	}
	for _, name := range schema.Required {
		if _, ok := base[name]; ok {
			with("without "+prefix+name, prefix+name, func(m map[string]any) { delete(m, name) })
		}
	}
	if schema.AdditionalProperties.Has != nil && !*schema.AdditionalProperties.Has {
		with("an undeclared field "+prefix+"zz_extra", prefix+"zz_extra", func(m map[string]any) { m["zz_extra"] = 1 })
	}
	if ap := schema.AdditionalProperties.Schema; ap != nil && ap.Value != nil {
		for _, v := range jsonValues(ap.Value) {
			with(fmt.Sprintf("%szz_key = %s", prefix, mustMarshal(nil, v)), prefix+"zz_key", func(m map[string]any) { m["zz_key"] = v })
		}
	}
	for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
		ref := schema.Properties[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		field := prefix + name
		ps := nonNull(ref.Value)
		if comp, ok := from[field]; ok {
			ps = spec.Doc.Components.Schemas[comp].Value
		}
		with(field+" = null", field, func(m map[string]any) { m[name] = nil })
		for _, v := range jsonValues(ps) {
			with(fmt.Sprintf("%s = %.60s", field, mustMarshal(nil, v)), field, func(m map[string]any) { m[name] = v })
		}
		if len(ps.Properties) > 0 || (ps.AdditionalProperties.Schema != nil && ps.AdditionalProperties.Schema.Value != nil) {
			inner, _ := base[name].(map[string]any)
			if inner == nil {
				inner = map[string]any{}
			}
			for _, m := range bodyMutations(spec, ps, inner, field+".", from) {
				with(m.what, m.field, func(b map[string]any) { b[name] = m.body })
			}
		}
	}
	return out
}

// nonNull is the schema of the non-null values of s: the other branch of
// an anyOf with {"type": "null"} (an optional field a client may send as
// null), else s.
func nonNull(s *openapi3.Schema) *openapi3.Schema {
	if s.Type != nil || len(s.AnyOf) != 2 {
		return s
	}
	for i, branch := range s.AnyOf {
		if branch.Value != nil && branch.Value.Type.Is(openapi3.TypeNull) && s.AnyOf[1-i].Value != nil {
			return s.AnyOf[1-i].Value
		}
	}
	return s
}

// parameterValues are the values of a parameter schema worth trying, as
// strings: the boundaries, one past each, the wrong type, off the enum,
// blank, symbols, the examples. The empty value is added by the caller.
func parameterValues(s *openapi3.Schema) []string {
	var out []string
	for _, v := range jsonValues(s) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case json.Number:
			out = append(out, string(v))
		case bool:
			out = append(out, strconv.FormatBool(v))
		}
	}
	if s.Type.Includes(openapi3.TypeBoolean) {
		out = append(out, "1", "0", "TRUE")
	}
	if s.Type.Includes(openapi3.TypeInteger) {
		out = append(out, "+1", "01", "1.0", "0x10")
	}
	if s.Type.Includes(openapi3.TypeNumber) {
		out = append(out, "0x1p1", "Inf", "NaN", "1_0")
	}
	if s.Type.Includes(openapi3.TypeString) && len(s.Enum) == 0 {
		out = append(out, "\u3000", "±", "치킨")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// jsonValues are the JSON values of a schema worth trying.
func jsonValues(s *openapi3.Schema) []any {
	out := []any{}
	for _, e := range s.Enum {
		out = append(out, e)
	}
	out = append(out, s.Examples...)
	if s.Example != nil {
		out = append(out, s.Example)
	}
	switch {
	case len(s.Enum) > 0:
		out = append(out, "zz-not-in-the-enum")
	case s.Type.Includes(openapi3.TypeInteger):
		out = append(out, "1", 1.5)
		if s.Min != nil {
			out = append(out, number(*s.Min, 0), number(*s.Min, -1))
		}
		if s.Max != nil {
			out = append(out, number(*s.Max, 0), number(*s.Max, 1))
		}
		if s.Min == nil && s.Max == nil {
			out = append(out, json.Number("0"), json.Number("-1"))
		}
		if s.Format == "int64" && s.Max == nil {
			out = append(out, json.Number("9223372036854775807"))
		}
	case s.Type.Includes(openapi3.TypeNumber):
		out = append(out, "1", json.Number("0.5"))
		if s.Min != nil {
			out = append(out, number(*s.Min, 0), number(*s.Min, -0.5))
		}
		if s.ExclusiveMin.Value != nil {
			out = append(out, number(*s.ExclusiveMin.Value, 0), number(*s.ExclusiveMin.Value, 0.5))
		}
		if s.Max != nil {
			out = append(out, number(*s.Max, 0), number(*s.Max, 0.5))
		}
	case s.Type.Includes(openapi3.TypeBoolean):
		out = append(out, true, false, "true")
	case s.Type.Includes(openapi3.TypeString):
		out = append(out, 5, "", " ", "a")
		if s.MinLength > 1 {
			out = append(out, strings.Repeat("a", int(s.MinLength)-1), strings.Repeat("a", int(s.MinLength)))
		}
		if s.MaxLength != nil {
			out = append(out, strings.Repeat("a", int(*s.MaxLength)), strings.Repeat("a", int(*s.MaxLength)+1))
		}
	case s.Type.Includes(openapi3.TypeObject):
		out = append(out, "x")
	case s.Type.Includes(openapi3.TypeArray):
		out = append(out, "x", []any{})
		if s.Items != nil && s.Items.Value != nil && s.Items.Value.Type.Includes(openapi3.TypeString) && len(s.Items.Value.Enum) == 0 {
			out = append(out, []any{"a"}, []any{""}, []any{5})
			if s.MaxItems != nil {
				many := make([]any, *s.MaxItems+1)
				for i := range many {
					many[i] = "a"
				}
				out = append(out, many[1:], many)
			}
		}
	}
	return slices.DeleteFunc(out, func(v any) bool { return v == nil })
}

// maxExact is the largest integer below which float64 holds every
// integer: the validator compares numbers as float64, so beyond it a bound
// and one past it are the same number to it, and such values are not
// generated (the document's int64 and uint64 bounds are beyond it).
const maxExact = 1 << 53

// number is bound+delta as an exact JSON number, or nil when either is
// beyond maxExact.
func number(bound, delta float64) any {
	if bound > maxExact || bound < -maxExact || bound+delta > maxExact || bound+delta < -maxExact {
		return nil
	}
	f := new(big.Float).SetPrec(200).SetFloat64(bound)
	f.Add(f, new(big.Float).SetPrec(200).SetFloat64(delta))
	if f.IsInt() {
		i, _ := f.Int(nil)
		return json.Number(i.String())
	}
	return json.Number(f.Text('f', -1))
}

// setQuery replaces the parameter name in query with pair ("name=v", or
// "name" bare), at the end.
func setQuery(query, name, pair string) string {
	return joinQuery(dropQuery(query, name), pair)
}

func joinQuery(query, pair string) string {
	if query == "" {
		return pair
	}
	return query + "&" + pair
}

func dropQuery(query, name string) string {
	var kept []string
	for pair := range strings.SplitSeq(query, "&") {
		if k, _, _ := strings.Cut(pair, "="); pair != "" && k != name {
			kept = append(kept, pair)
		}
	}
	return strings.Join(kept, "&")
}

// setPathParam replaces the path parameter name of the OpenAPI path
// template in the concrete path with value, escaped. It reports false when
// value would change the path's shape.
func setPathParam(template, path, name, value string) (string, bool) {
	if value == "" || strings.Contains(value, "/") {
		return "", false
	}
	tparts, parts := strings.Split(template, "/"), strings.Split(path, "/")
	if len(tparts) != len(parts) {
		return "", false
	}
	for i, tp := range tparts {
		if tp == "{"+name+"}" {
			parts[i] = url.PathEscape(value)
			return strings.Join(parts, "/"), true
		}
	}
	return "", false
}

// cloneJSON deep-copies a JSON object, numbers kept exact.
func cloneJSON(m map[string]any) map[string]any {
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(mustMarshal(nil, m)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		if t != nil {
			t.Fatal(err)
		}
		panic(err)
	}
	return b
}
