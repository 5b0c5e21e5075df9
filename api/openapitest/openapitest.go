// Package openapitest holds HTTP traffic to baedal's server against its
// OpenAPI document (api/openapi.json), for tests: a Spec maps the document's
// operations to the server's route patterns, and a Transport validates each
// request it sends and each response it receives, problem bodies included,
// with kin-openapi's openapi3filter.
//
// Invariant: a Transport never changes what the client and the server see;
// it only reads the bodies (and puts them back) and reports mismatches.
//
// It is a test helper: no package of the server imports it, so kin-openapi
// is not linked into the baedal binary.
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/baedal/baedal/api"
)

// GoPatternExtension, on an operation, names the server route pattern it
// documents when that is not METHOD + path: a ServeMux subtree pattern
// such as "GET /console/" has one operation per level of files below it.
const GoPatternExtension = "x-go-pattern"

// SharedStatuses are the statuses every route can answer, whatever its
// handler does: the shared input rules (400, 408, 413, 431) and a server
// failure (500). AdminStatuses are those of every admin route, BodyStatuses
// those of every route that takes a body (a Content-Type it does not take,
// a Content-Encoding: api.CheckBodyMediaType).
var (
	SharedStatuses = []string{"400", "408", "413", "431", "500"}
	AdminStatuses  = []string{"401", "403"}
	BodyStatuses   = []string{"415"}
)

func init() {
	// The console's files; the document lists them as strings.
	for _, ct := range []string{"text/html", "text/css", "text/javascript", "image/svg+xml", "application/openmetrics-text", "application/x-ndjson"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	// The formats JSON Schema defines that kin-openapi only checks on
	// request: ipv4 (RFC 2673 dotted quad) and ipv6 (RFC 4291, which has
	// no zone: "fe80::1%eth0" is not one).
	openapi3.DefineIPv4Format()
	openapi3.DefineStringFormatValidator("ipv6", ipv6Format{})
}

// ipv6Format validates the ipv6 format: an IPv6 address without a zone.
type ipv6Format struct{}

func (ipv6Format) Validate(s string) error {
	addr, err := netip.ParseAddr(s)
	if err != nil || !addr.Is6() || addr.Zone() != "" {
		return fmt.Errorf("%q is not an IPv6 address without a zone", s)
	}
	return nil
}

// Spec is the loaded, validated document and a router over its paths.
type Spec struct {
	Doc    *openapi3.T
	router routers.Router
}

// Load parses and validates the embedded document (api.OpenAPIDocument).
func Load() (*Spec, error) {
	return Parse(api.OpenAPIDocument())
}

// Parse parses and validates an OpenAPI document.
func Parse(data []byte) (*Spec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("openapitest: load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapitest: invalid OpenAPI document: %w", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: route the OpenAPI document: %w", err)
	}
	return &Spec{Doc: doc, router: router}, nil
}

// Operation is one operation of the document and the server route it
// documents.
type Operation struct {
	Method, Path string
	Pattern      string // the server's route pattern, e.g. "GET /v1/users/{id}"
	Op           *openapi3.Operation
}

// Operations lists every operation, sorted by path then method.
func (s *Spec) Operations() []Operation {
	var out []Operation
	for path, item := range s.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			out = append(out, Operation{Method: method, Path: path, Pattern: goPattern(method, path, op), Op: op})
		}
	}
	slices.SortFunc(out, func(a, b Operation) int {
		return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method)
	})
	return out
}

// goPattern is the ServeMux pattern an operation documents: its
// x-go-pattern, else METHOD + path, where "/" alone is "/{$}" (the
// OpenAPI path "/" matches only itself, as "/{$}" does).
func goPattern(method, path string, op *openapi3.Operation) string {
	if p, ok := op.Extensions[GoPatternExtension].(string); ok {
		return p
	}
	if path == "/" {
		path = "/{$}"
	}
	return method + " " + path
}

// Routes returns the server route patterns the document describes, sorted
// and without duplicates, in the form of api.Server.Routes.
func (s *Spec) Routes() []string {
	var out []string
	for _, op := range s.Operations() {
		out = append(out, op.Pattern)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CheckRoutes compares the server's routes (api.Server.Routes) with the
// document and returns one error per difference, each naming the route and
// what to do about it.
func (s *Spec) CheckRoutes(registered []string) []error {
	var errs []error
	documented := s.Routes()
	for _, r := range registered {
		if !slices.Contains(documented, r) {
			method, path, _ := strings.Cut(r, " ")
			errs = append(errs, fmt.Errorf("route %q is registered but has no operation in api/openapi.json: add paths[%q].%s (with %s if the OpenAPI path differs from the pattern)",
				r, strings.TrimSuffix(path, "{$}"), strings.ToLower(method), GoPatternExtension))
		}
	}
	for _, r := range documented {
		if !slices.Contains(registered, r) {
			errs = append(errs, fmt.Errorf("api/openapi.json documents route %q, which the server does not register: remove it, or register the route", r))
		}
	}
	return errs
}

// CheckStatuses returns one error per operation that does not declare a
// shared status (SharedStatuses), an admin status (AdminStatuses) when it
// needs the admin token (security adminBearer), or a body status
// (BodyStatuses) when it takes a request body.
func (s *Spec) CheckStatuses() []error {
	var errs []error
	for _, op := range s.Operations() {
		want := SharedStatuses
		if op.Op.Security != nil && len(*op.Op.Security) > 0 {
			want = append(slices.Clone(want), AdminStatuses...)
		}
		if op.Op.RequestBody != nil {
			want = append(slices.Clone(want), BodyStatuses...)
		}
		for _, code := range want {
			if op.Op.Responses.Value(code) == nil {
				errs = append(errs, fmt.Errorf("%s %s (%s) does not declare the %s response every such route can answer", op.Method, op.Path, op.Pattern, code))
			}
		}
	}
	return errs
}

// Exchange is one request and its response, bodies read whole.
type Exchange struct {
	Request      *http.Request
	RequestBody  []byte
	Response     *http.Response
	ResponseBody []byte
}

// Validate checks an exchange against the document: the request (route,
// parameters, body, admin bearer) and the response (status declared for the
// operation, headers, content type, body). reqErr is nil when the request
// matches; respErr when the response does. A request on no documented
// route fails both.
func (s *Spec) Validate(ctx context.Context, x Exchange) (reqErr, respErr error) {
	req := x.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	route, pathParams, err := s.router.FindRoute(req)
	if err != nil {
		err = fmt.Errorf("no operation for %s %s: %w", req.Method, req.URL.Path, err)
		return err, err
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus:             true,
		RejectWhenRequestBodyNotSpecified: true,
		MultiError:                        true,
		AuthenticationFunc:                checkBearer,
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: opts}
	reqErr = errors.Join(openapi3filter.ValidateRequest(ctx, in), checkQueryNames(req, route), checkSpelling(req, route, pathParams))
	// The response is validated on the request as sent, even if invalid.
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	respIn := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: opts},
		Status:                 x.Response.StatusCode,
		Header:                 x.Response.Header,
		Body:                   io.NopCloser(bytes.NewReader(x.ResponseBody)),
		Options:                opts,
	}
	respErr = openapi3filter.ValidateResponse(ctx, respIn)
	return reqErr, respErr
}

// checkQueryNames applies the rule OpenAPI cannot state and the document's
// description does: every route refuses a query parameter it does not
// declare, and one given twice.
func checkQueryNames(req *http.Request, route *routers.Route) error {
	declared := map[string]bool{}
	for _, params := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range params {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				declared[p.Value.Name] = true
			}
		}
	}
	var errs []error
	for name, values := range req.URL.Query() {
		switch {
		case !declared[name]:
			errs = append(errs, fmt.Errorf("query parameter %q is not declared for %s %s", name, route.Method, route.Path))
		case len(values) > 1:
			errs = append(errs, fmt.Errorf("query parameter %q is given %d times", name, len(values)))
		}
	}
	return errors.Join(errs...)
}

// checkSpelling applies the spelling of values OpenAPI's serialization
// implies and the document's description states, which kin-openapi does
// not check (it parses with strconv.ParseInt and ParseBool): an integer
// parameter, in the query or the path, is written in plain decimal ("5",
// never "+5", "05" or "-0"), and a boolean one is true or false (not 1, t
// or TRUE).
func checkSpelling(req *http.Request, route *routers.Route, pathParams map[string]string) error {
	var errs []error
	for _, params := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, ref := range params {
			p := ref.Value
			if p == nil || p.Schema == nil || p.Schema.Value == nil {
				continue
			}
			var raw string
			switch p.In {
			case openapi3.ParameterInQuery:
				if !req.URL.Query().Has(p.Name) {
					continue
				}
				raw = req.URL.Query().Get(p.Name)
			case openapi3.ParameterInPath:
				var ok bool
				if raw, ok = pathParams[p.Name]; !ok {
					continue
				}
			default:
				continue
			}
			schema := p.Schema.Value
			switch {
			case schema.Type.Is(openapi3.TypeInteger):
				if n, err := strconv.ParseInt(raw, 10, 64); err == nil && strconv.FormatInt(n, 10) != raw {
					errs = append(errs, fmt.Errorf("%s parameter %q: %q is not an integer in plain decimal", p.In, p.Name, raw))
				}
			case schema.Type.Is(openapi3.TypeBoolean):
				if raw != "true" && raw != "false" && raw != "" {
					errs = append(errs, fmt.Errorf("%s parameter %q: %q is not true or false", p.In, p.Name, raw))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkBearer accepts a request to an adminBearer operation that carries a
// bearer token; whether it is the right one is the server's business.
func checkBearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecuritySchemeName != "adminBearer" {
		return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
	}
	if token, ok := strings.CutPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer "); !ok || token == "" {
		return errors.New("no Authorization: Bearer TOKEN header")
	}
	return nil
}

// Transport is an http.RoundTripper that validates every exchange it
// carries (Spec.Validate) and hands the result to Check.
type Transport struct {
	Spec *Spec
	// Base sends the requests; nil is http.DefaultTransport.
	Base http.RoundTripper
	// Check receives each exchange and the validation errors (nil when it
	// matches): tests decide there which mismatches fail them.
	Check func(x Exchange, reqErr, respErr error)
}

// RoundTrip sends req through Base, reads both bodies whole, validates the
// exchange, and returns the response with its body put back.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: read the request body: %w", err)
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("openapitest: read the response body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	x := Exchange{Request: req, RequestBody: reqBody, Response: resp, ResponseBody: respBody}
	reqErr, respErr := t.Spec.Validate(req.Context(), x)
	if t.Check != nil {
		t.Check(x, reqErr, respErr)
	}
	return resp, nil
}
