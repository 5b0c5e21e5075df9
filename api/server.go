// Package api is baedal's HTTP surface: routing, request limits, timeouts,
// JSON problem errors, health and metrics. Feature packages register their
// handlers on a Server; they never write error bodies themselves.
//
// Invariant: every response to a failed request is an application/problem+json
// body with a 4xx or 5xx status, and every request body is size-limited.
// Before a handler runs, the request has passed the shared input rules: its
// request line and headers are within MaxHeaderBytes, its path and query are
// valid UTF-8 text without NUL, each query parameter is well encoded, given
// once, with a value, and one the route declared at registration, and its
// body arrived whole within ReadTimeout, within MaxBodyBytes, as valid UTF-8
// without NUL, lone surrogate escapes or a key given twice in one object,
// and, on a route that takes a body, as one of its media types without
// Content-Encoding (see request.go, bodyscan.go, mediatype.go). Handlers read
// that body from memory.
package api

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config is the HTTP server's configuration.
type Config struct {
	// Addr to listen on; loopback by default.
	Addr string
	// MaxBodyBytes caps every request body (413 above it).
	MaxBodyBytes int64
	// MaxHeaderBytes caps the request line (path and query) plus the
	// headers: above it the answer is a 431 problem. net/http itself refuses
	// requests above 16×MaxHeaderBytes, with a plain-text 431 no handler
	// sees.
	MaxHeaderBytes int
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout bound each
	// connection; ShutdownTimeout bounds the graceful drain on stop. A
	// request whose body has not fully arrived ReadTimeout after the request
	// started is answered 408.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout, ShutdownTimeout time.Duration
	// AdminToken guards admin endpoints (reindex, migration modes). Empty
	// disables them: they answer 403.
	AdminToken string
}

// DefaultAddr is the API's default listen address.
const DefaultAddr = "127.0.0.1:19080"

// Defaults returns a loopback server with conservative limits.
func Defaults() Config {
	return Config{
		Addr:              DefaultAddr,
		MaxBodyBytes:      8 << 20,
		MaxHeaderBytes:    64 << 10,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ShutdownTimeout:   20 * time.Second,
	}
}

// Flags binds the configuration to command-line flags.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "HTTP listen address (loopback by default)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest accepted request body")
	fs.IntVar(&c.MaxHeaderBytes, "max-header-bytes", c.MaxHeaderBytes, "largest accepted request line (path and query) plus headers")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", c.ReadHeaderTimeout, "time to read request headers")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", c.ReadTimeout, "time to read a whole request, body included (408 after it)")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", c.WriteTimeout, "time to write a response")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "keep-alive idle timeout")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "graceful shutdown drain time")
	fs.StringVar(&c.AdminToken, "admin-token", c.AdminToken, "token for admin endpoints (prefer the env var BAEDAL_ADMIN_TOKEN); empty disables them")
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	_, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("addr: got %q, want host:port: %w", c.Addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("addr: port %q is not a number in 0..65535", port)
	}
	if c.MaxBodyBytes < 1024 || c.MaxBodyBytes > 1<<30 {
		return fmt.Errorf("max-body-bytes: got %d, allowed: 1024..%d", c.MaxBodyBytes, 1<<30)
	}
	if c.MaxHeaderBytes < 4096 || c.MaxHeaderBytes > 1<<20 {
		return fmt.Errorf("max-header-bytes: got %d, allowed: 4096..%d", c.MaxHeaderBytes, 1<<20)
	}
	for name, d := range map[string]time.Duration{
		"read-header-timeout": c.ReadHeaderTimeout, "read-timeout": c.ReadTimeout,
		"write-timeout": c.WriteTimeout, "idle-timeout": c.IdleTimeout, "shutdown-timeout": c.ShutdownTimeout,
	} {
		if d <= 0 {
			return fmt.Errorf("%s: got %s, must be > 0", name, d)
		}
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		return errors.New("admin-token: must be at least 16 characters")
	}
	return nil
}

// IsLoopback reports whether the configured address binds loopback only.
func (c *Config) IsLoopback() bool {
	host, _, _ := net.SplitHostPort(c.Addr)
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// HandlerFunc is a handler that returns an error instead of writing one.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Server routes requests and applies limits, logging and metrics to each.
type Server struct {
	cfg Config
	log *slog.Logger
	// mux routes every request: the registered routes, and a catch-all
	// answering the rest with a problem (unmatched). routes holds the
	// registered routes alone: unmatched asks it whether a path is unknown
	// (404) or known for other methods (405 and Allow), so requests that do
	// match are routed once.
	mux, routes *http.ServeMux
	// patterns lists the registered routes, in registration order; params
	// holds the query parameters each takes.
	patterns []string
	params   map[string][]string
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New builds a server. reg receives the HTTP metrics and is served on /metrics.
func New(cfg Config, log *slog.Logger, reg *prometheus.Registry) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:    cfg,
		log:    log,
		mux:    http.NewServeMux(),
		routes: http.NewServeMux(),
		params: map[string][]string{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baedal_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route"}),
	}
	reg.MustRegister(s.requests, s.duration)
	s.mux.HandleFunc("/", s.unmatched)
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	s.Handle("GET /metrics", func(w http.ResponseWriter, r *http.Request) error {
		metrics.ServeHTTP(w, r)
		return nil
	})
	return s
}

// handle registers h for pattern on both muxes.
func (s *Server) handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.routes.Handle(pattern, h)
	s.patterns = append(s.patterns, pattern)
}

// Routes returns the registered patterns ("GET /v1/search", ...), sorted:
// every route the server answers besides the 404/405 catch-all. Tests walk
// it to cover every route.
func (s *Server) Routes() []string {
	out := slices.Clone(s.patterns)
	slices.Sort(out)
	return out
}

// unmatched answers a request no route matched with a problem, keeping the
// status (404, or 405 with Allow) that the routes alone give it.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	r.Pattern = "" // the metrics label it unmatched, not "/"
	probe := httptest.NewRecorder()
	s.routes.ServeHTTP(probe, r)
	if allow := probe.Header().Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	WriteProblem(w, NewProblem(probe.Code, "no route for "+r.Method+" "+r.URL.Path))
}

// Handle registers h for a method-and-path pattern such as "GET /v1/search".
// opts say what the route takes besides its path: Params, the query
// parameters (any other, and any given with an empty value, is a 400
// problem naming it, CheckQueryParams), and Body, the media types of its
// body (MediaTypeJSON, MediaTypeNDJSON; a non-empty body sent with another
// Content-Type, or with a Content-Encoding, is a 415 problem before its text
// is checked, CheckBodyMediaType). A route registered without Params takes
// no query parameters, so no handler can forget that rule. A route
// registered without Body reads no body: one sent anyway is only held to
// the text rules (CheckBodyText) and then ignored. h runs once the query
// and the body have been checked.
func (s *Server) Handle(pattern string, h HandlerFunc, opts ...RouteOption) {
	s.register(pattern, false, h, opts)
}

// HandleAdmin registers h behind the admin token (Authorization: Bearer
// TOKEN), as Handle does. The token is checked before the query and the
// body.
func (s *Server) HandleAdmin(pattern string, h HandlerFunc, opts ...RouteOption) {
	s.register(pattern, true, h, opts)
}

// RouteOption says what a route takes: Params or Body.
type RouteOption func(*route)

// route is what a registered route takes.
type route struct {
	params, bodyTypes []string
}

// Params declares the query parameters a route takes.
func Params(names ...string) RouteOption {
	return func(r *route) { r.params = append(r.params, names...) }
}

// Body declares the media types of the body a route takes.
func Body(mediaTypes ...string) RouteOption {
	return func(r *route) { r.bodyTypes = append(r.bodyTypes, mediaTypes...) }
}

// QueryParams returns the query parameters each registered route takes, by
// pattern (routes that take none map to an empty list). Tests compare it
// with the API's description.
func (s *Server) QueryParams() map[string][]string {
	out := make(map[string][]string, len(s.params))
	for pattern, params := range s.params {
		out[pattern] = slices.Clone(params)
	}
	return out
}

func (s *Server) register(pattern string, admin bool, h HandlerFunc, opts []RouteOption) {
	var rt route
	for _, o := range opts {
		o(&rt)
	}
	s.params[pattern] = slices.Clone(rt.params)
	s.handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := s.checkAdmin(w, r, admin)
		if err == nil {
			err = CheckQueryParams(r.URL.RawQuery, rt.params)
		}
		if err == nil {
			err = bufferBody(r, rt.bodyTypes)
		}
		if err == nil {
			err = h(w, r)
		}
		if err != nil {
			var p *Problem
			var tooBig *http.MaxBytesError
			var late *DeadlineError
			if !errors.As(err, &p) && !errors.As(err, &tooBig) {
				if errors.As(err, &late) {
					s.log.Warn("request refused: past its deadline", "method", r.Method, "path", r.URL.Path, "deadline", late.Deadline, "err", err)
				} else if what, ok := IsUnavailable(err); ok {
					s.log.Warn("request refused: unavailable", "method", r.Method, "path", r.URL.Path, "unavailable", what, "err", err)
				} else {
					s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
				}
			}
			if errors.As(err, &p) && p.Status == http.StatusRequestTimeout {
				w.Header().Set("Connection", "close") // the rest of the body may still come
			}
			if errors.As(err, &p) && p.Status == http.StatusUnsupportedMediaType {
				// RFC 9110, 15.5.16 and 12.5.3: say what would be read.
				switch p.Field {
				case "Content-Encoding":
					w.Header().Set("Accept-Encoding", "identity")
				case "Content-Type":
					w.Header().Set("Accept", strings.Join(p.Allowed, ", "))
				}
			}
			WriteProblem(w, err)
		}
	}))
}

func (s *Server) checkAdmin(w http.ResponseWriter, r *http.Request, admin bool) error {
	if !admin {
		return nil
	}
	if s.cfg.AdminToken == "" {
		return NewProblem(http.StatusForbidden, "admin endpoints are disabled: start the server with --admin-token or BAEDAL_ADMIN_TOKEN")
	}
	if !tokenEqual(r.Header.Get("Authorization"), "Bearer "+s.cfg.AdminToken) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="baedal-admin"`)
		return NewProblem(http.StatusUnauthorized, "missing or wrong admin token (Authorization: Bearer TOKEN)")
	}
	return nil
}

// bufferBody reads the whole body (already capped by ServeHTTP's
// MaxBytesReader and bounded in time by the connection's read deadline),
// checks how it is sent when the route takes a body (bodyTypes, see
// CheckBodyMediaType) and its text (CheckBodyText), and puts it back as an
// in-memory reader, so a slow, short, over-size, wrongly typed, non-UTF-8
// or ambiguous body is one problem here (408, 400, 413, 415) for every
// route, and no handler sees a read error.
func bufferBody(r *http.Request, bodyTypes []string) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := ReadBody(r.Body, math.MaxInt64-1)
	if err != nil {
		return err
	}
	if len(body) > 0 && len(bodyTypes) > 0 {
		if err := CheckBodyMediaType(r.Header, bodyTypes...); err != nil {
			return err
		}
	}
	if err := CheckBodyText(body); err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return nil
}

// headerBytes is the size of the request line and headers as received,
// near enough to enforce MaxHeaderBytes.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// checkRequestLine applies the shared rules of the request line: its size
// (431), the path's text and the query's encoding (400 naming the
// parameter).
func (s *Server) checkRequestLine(r *http.Request) error {
	limit := s.cfg.MaxHeaderBytes
	if limit <= 0 {
		limit = Defaults().MaxHeaderBytes
	}
	if n := headerBytes(r); n > limit {
		p := NewProblem(http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("the request line and headers are %d bytes, more than the limit of %d", n, limit))
		if len(r.URL.RawQuery) > limit/2 {
			p.Field = "query"
		}
		return p
	}
	if err := CheckPath(r.URL.Path); err != nil {
		return err
	}
	_, err := ParseQuery(r.URL.RawQuery)
	return err
}

// ServeHTTP applies the request-line rules and the body limit, recovers
// panics and records metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
			if !rec.wrote {
				WriteProblem(rec, errors.New("panic"))
			}
		}
		route := r.Pattern
		if route == "" || route == "/" {
			route = "unmatched"
		}
		s.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
		s.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}()
	if err := s.checkRequestLine(r); err != nil {
		_, r.Pattern = s.routes.Handler(r) // label the metrics with the route
		WriteProblem(rec, err)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// Run serves until ctx is cancelled, then drains in-flight requests for up to
// ShutdownTimeout. ready, if not nil, receives the bound address.
func (s *Server) Run(ctx context.Context, ready func(addr string)) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	if !s.cfg.IsLoopback() {
		s.log.Warn("listening beyond loopback", "addr", s.cfg.Addr)
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("api: listen on %s: %w", s.cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    16 * s.cfg.MaxHeaderBytes, // ServeHTTP answers MaxHeaderBytes itself, as a problem
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("api: serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("api: graceful shutdown: %w", err)
	}
	return nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
