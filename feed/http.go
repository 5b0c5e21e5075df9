package feed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baedal/baedal/api"
)

// maxRequestBytes caps a feed request body below the server-wide limit.
const maxRequestBytes = 64 << 10

// RegisterRoutes adds the feed API to s:
//
//	POST   /v1/users                         {username, profilePic} → 201 User
//	GET    /v1/users/{id}                    → User
//	PUT    /v1/users/{id}/follows/{target}   → 204
//	DELETE /v1/users/{id}/follows/{target}   → 204
//	POST   /v1/posts                         {authorId, text} → 201 Post
//	GET    /v1/posts/{id}                    → Post
//	GET    /v1/users/{id}/feed?limit=&before= → Page
//	GET    /v1/users/{id}/feed/strategies?limit= → the newest page by pull, push and hybrid (StrategiesView)
//	GET    /v1/posts/{id}/fanout             → FanoutProgress: followers whose timeline holds the post
//	GET    /v1/feed/example                  → Example: a reader, an author and the most followed user to show
//
// and the compatibility routes of the write-up's load scripts:
//
//	GET  /api/v1/feeds?user-id=N[&limit=] → [{username, profilePic, text, timestamp}] newest first
//	POST /api/v1/tweets                  {senderId, text} → 201, Location: /v1/posts/{id}
//
// Ids, in paths and parameters, are canonical decimals ("5", never "+5" or
// "05"); bodies with unknown fields and unknown query parameters are
// refused, each a 400 problem naming the field.
func RegisterRoutes(s *api.Server, svc *Service) {
	h := handlers{svc}
	s.Handle("POST /v1/users", h.createUser, api.Body(api.MediaTypeJSON))
	s.Handle("GET /v1/users/{id}", h.getUser)
	s.Handle("PUT /v1/users/{id}/follows/{target}", h.follow)
	s.Handle("DELETE /v1/users/{id}/follows/{target}", h.unfollow)
	s.Handle("POST /v1/posts", h.createPost, api.Body(api.MediaTypeJSON))
	s.Handle("GET /v1/posts/{id}", h.getPost)
	s.Handle("GET /v1/users/{id}/feed", h.feed, api.Params("limit", "before"))
	s.Handle("GET /v1/users/{id}/feed/strategies", h.feedStrategies, api.Params("limit"))
	s.Handle("GET /v1/posts/{id}/fanout", h.postFanout)
	s.Handle("GET /v1/feed/example", h.example)
	s.Handle("GET /api/v1/feeds", h.compatFeed, api.Params("user-id", "limit"))
	s.Handle("POST /api/v1/tweets", h.compatTweet, api.Body(api.MediaTypeJSON))
}

type handlers struct{ svc *Service }

// CreateUserRequest is the body of POST /v1/users.
type CreateUserRequest struct {
	Username   string `json:"username"`
	ProfilePic string `json:"profilePic"`
}

// CreatePostRequest is the body of POST /v1/posts.
type CreatePostRequest struct {
	AuthorID int64  `json:"authorId"`
	Text     string `json:"text"`
}

// CompatTweetRequest is the body of POST /api/v1/tweets.
type CompatTweetRequest struct {
	SenderID int64  `json:"senderId"`
	Text     string `json:"text"`
}

// CompatFeedItem is one element of GET /api/v1/feeds.
type CompatFeedItem struct {
	Username   string    `json:"username"`
	ProfilePic string    `json:"profilePic"`
	Text       string    `json:"text"`
	Timestamp  time.Time `json:"timestamp"`
}

func (h handlers) createUser(w http.ResponseWriter, r *http.Request) error {
	var req CreateUserRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	u, err := h.svc.CreateUser(r.Context(), req.Username, req.ProfilePic)
	if err != nil {
		return problemFor(err)
	}
	w.Header().Set("Location", "/v1/users/"+strconv.FormatInt(u.ID, 10))
	api.WriteJSON(w, http.StatusCreated, u)
	return nil
}

func (h handlers) getUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	u, err := h.svc.GetUser(r.Context(), id)
	if err != nil {
		return problemFor(err, "id")
	}
	api.WriteJSON(w, http.StatusOK, u)
	return nil
}

func (h handlers) follow(w http.ResponseWriter, r *http.Request) error {
	return h.followEdge(w, r, h.svc.Follow)
}

func (h handlers) unfollow(w http.ResponseWriter, r *http.Request) error {
	return h.followEdge(w, r, h.svc.Unfollow)
}

func (h handlers) followEdge(w http.ResponseWriter, r *http.Request, op func(ctx context.Context, follower, followee int64) error) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	target, err := pathID(r, "target")
	if err != nil {
		return err
	}
	if err := op(r.Context(), id, target); err != nil {
		var unknown *UnknownUserError
		if errors.As(err, &unknown) && unknown.ID == target {
			return problemFor(err, "target")
		}
		return problemFor(err, "id")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h handlers) createPost(w http.ResponseWriter, r *http.Request) error {
	var req CreatePostRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.AuthorID <= 0 {
		return api.BadRequest("authorId", "must be a user id > 0")
	}
	p, err := h.svc.CreatePost(r.Context(), req.AuthorID, req.Text)
	if err != nil {
		return problemFor(err, "authorId")
	}
	w.Header().Set("Location", "/v1/posts/"+strconv.FormatInt(p.ID, 10))
	api.WriteJSON(w, http.StatusCreated, p)
	return nil
}

func (h handlers) getPost(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	p, err := h.svc.GetPost(r.Context(), id)
	if err != nil {
		return problemFor(err)
	}
	api.WriteJSON(w, http.StatusOK, p)
	return nil
}

func (h handlers) feed(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := api.Query(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(q.Get("limit"), "limit", 1, int64(h.svc.cfg.MaxPageSize))
	if err != nil {
		return err
	}
	before, err := queryInt(q.Get("before"), "before", 1, MaxPostID)
	if err != nil {
		return err
	}
	page, err := h.svc.FeedRaw(r.Context(), id, before, int(limit))
	if err != nil {
		return problemFor(err, "id")
	}
	buf := responseBuffers.Get().(*[]byte)
	defer putResponseBuffer(buf)
	*buf = appendPagePayload((*buf)[:0], page.Posts, page.NextBefore)
	writeJSONBytes(w, http.StatusOK, buf)
	return nil
}

// compatFeed serves GET /api/v1/feeds. The server has refused unknown and
// empty parameters (RegisterRoutes declares user-id and limit), so the
// values are read in place.
func (h handlers) compatFeed(w http.ResponseWriter, r *http.Request) error {
	raw := queryValue(r, "user-id")
	if raw == "" {
		return api.BadRequest("user-id", "is required: a user id > 0")
	}
	id, err := queryInt(raw, "user-id", 1, 1<<62)
	if err != nil {
		return err
	}
	limit, err := queryInt(queryValue(r, "limit"), "limit", 1, int64(h.svc.cfg.MaxPageSize))
	if err != nil {
		return err
	}
	page, err := h.svc.FeedRaw(r.Context(), id, 0, int(limit))
	if err != nil {
		return problemFor(err, "user-id")
	}
	buf := responseBuffers.Get().(*[]byte)
	defer putResponseBuffer(buf)
	if *buf, err = appendCompatPayload((*buf)[:0], page.Posts, h.svc.compat); err != nil {
		return err // FeedRaw checked every payload: a bug
	}
	writeJSONBytes(w, http.StatusOK, buf)
	return nil
}

// queryValue returns the first value of the query parameter name, as
// r.URL.Query().Get(name) does. A query without escapes ('%', '+') or ';' is
// scanned in place, without parsing every parameter into a map; any other goes
// through url.ParseQuery.
func queryValue(r *http.Request, name string) string {
	q := r.URL.RawQuery
	if strings.ContainsAny(q, "%+;") {
		return r.URL.Query().Get(name)
	}
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		key, value, _ := strings.Cut(pair, "=")
		if key == name {
			return value
		}
	}
	return ""
}

// responseBuffers holds *[]byte buffers for feed responses.
var responseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// putResponseBuffer returns buf to the pool unless it grew large.
func putResponseBuffer(buf *[]byte) {
	if cap(*buf) <= 256<<10 {
		responseBuffers.Put(buf)
	}
}

// writeJSONBytes writes the JSON value in *body and a newline, the way
// api.WriteJSON's encoder ends a body, with its Content-Length.
func writeJSONBytes(w http.ResponseWriter, status int, body *[]byte) {
	*body = append(*body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(*body)))
	w.WriteHeader(status)
	_, _ = w.Write(*body)
}

func (h handlers) compatTweet(w http.ResponseWriter, r *http.Request) error {
	var req CompatTweetRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.SenderID <= 0 {
		return api.BadRequest("senderId", "must be a user id > 0")
	}
	p, err := h.svc.CreatePost(r.Context(), req.SenderID, req.Text)
	if err != nil {
		return problemFor(err, "senderId")
	}
	w.Header().Set("Location", "/v1/posts/"+strconv.FormatInt(p.ID, 10))
	api.WriteJSON(w, http.StatusCreated, p)
	return nil
}

// decodeJSON reads one JSON object into v (api.DecodeJSON): malformed JSON,
// a wrong type, an unknown field, trailing data or a body over
// maxRequestBytes is a 4xx problem naming the field.
func decodeJSON(r *http.Request, v any) error {
	return api.DecodeJSON(r, maxRequestBytes, v)
}

// pathID parses the path id name: a canonical decimal id (api.ParseID).
func pathID(r *http.Request, name string) (int64, error) {
	raw := r.PathValue(name)
	id, ok := api.ParseID(raw, math.MaxInt64)
	if !ok {
		return 0, api.BadRequest(name, fmt.Sprintf("must be an id > 0 in plain decimal (no sign, no leading zero), got %q", truncate(raw, 40)))
	}
	return id, nil
}

// queryInt parses an optional id-like parameter in [lo, hi], lo >= 1,
// written as a canonical decimal; "" is 0.
func queryInt(raw, name string, lo, hi int64) (int64, error) {
	if raw == "" {
		return 0, nil
	}
	n, ok := api.ParseID(raw, hi)
	if !ok || n < lo {
		return 0, api.BadRequest(name, fmt.Sprintf("must be an integer in %d..%d in plain decimal (no sign, no leading zero), got %q", lo, hi, truncate(raw, 40)))
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// problemFor maps the service's errors to problem bodies. userField, if
// given, names the request field that carried a user id (default "id").
func problemFor(err error, userField ...string) error {
	var inv *InvalidError
	var unknown *UnknownUserError
	switch {
	case errors.As(err, &inv):
		return api.BadRequest(inv.Field, inv.Detail, inv.Allowed...)
	case errors.As(err, &unknown):
		p := api.NewProblem(http.StatusNotFound, unknown.Error())
		if len(userField) > 0 {
			p.Field = userField[0]
		}
		return p
	case errors.Is(err, ErrSelfFollow):
		return api.BadRequest("target", "must differ from id: a user cannot follow themselves")
	case errors.Is(err, ErrUsernameTaken):
		p := api.NewProblem(http.StatusConflict, err.Error())
		p.Field = "username"
		return p
	case errors.Is(err, ErrUnknownPost):
		p := api.NewProblem(http.StatusNotFound, err.Error())
		p.Field = "id"
		return p
	}
	return err
}
