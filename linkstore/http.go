package linkstore

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/baedal/baedal/api"
)

// MaxClickBodyBytes caps a POST /v1/clicks body: a real record is ~1-2 KB.
const MaxClickBodyBytes = 16 << 10

// RegisterRoutes adds the click API to s:
//
//	POST /v1/clicks                   store a new record (JSON), returns its click_id; 409 if the id exists
//	GET  /v1/clicks/{id}              the record and its consumed flag; 410 once expired
//	POST /v1/clicks/{id}/resolve      the deep link; marks it consumed, says if it already was; 410 once expired
//	GET  /v1/admin/links/migration    mode, allowed next modes, shadow-read report (admin)
//	PUT  /v1/admin/links/migration    {"mode": "..."} switches the mode (admin)
//	GET  /v1/admin/links/memory       ?records=N: bytes per record of every format in Redis (admin)
func RegisterRoutes(s *api.Server, svc *Service) {
	s.Handle("POST /v1/clicks", svc.handlePost, api.Body(api.MediaTypeJSON))
	s.Handle("GET /v1/clicks/{id}", svc.handleGet)
	s.Handle("POST /v1/clicks/{id}/resolve", svc.handleResolve)
	s.HandleAdmin("GET /v1/admin/links/migration", svc.handleGetMigration)
	s.HandleAdmin("PUT /v1/admin/links/migration", svc.handlePutMigration, api.Body(api.MediaTypeJSON))
	s.HandleAdmin("GET /v1/admin/links/memory", svc.handleGetMemory, api.Params("records"))
}

// postClickResponse is the body of a 201 from POST /v1/clicks.
type postClickResponse struct {
	ClickID   ClickID   `json:"click_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// handlePost creates a click. A client may choose the click_id (or get a
// random one); an id that is stored already is a 409 and the stored record
// stays as it is. expires_at must lie in (now, now+MaxLifetime]; without
// it the click expires after the default lifetime (ServiceConfig).
func (svc *Service) handlePost(w http.ResponseWriter, r *http.Request) error {
	rec, err := DecodeClickRequest(http.MaxBytesReader(w, r.Body, MaxClickBodyBytes), MaxClickBodyBytes)
	if err != nil {
		return err
	}
	now := svc.now().UTC()
	if rec.ClickID == (ClickID{}) {
		rec.ClickID = NewClickID()
	}
	if rec.ReceivedAt.IsZero() {
		rec.ReceivedAt = now
	}
	if rec.ExpiresAt.IsZero() {
		rec.ExpiresAt = now.Add(svc.defaultLifetime)
	}
	rec.ExpiresAt = rec.ExpiresAt.Truncate(time.Millisecond) // as stored
	if err := checkClickURLs(rec, svc.cfg.AppSchemes); err != nil {
		return err
	}
	if err := checkExpiry(rec.ExpiresAt, now, svc.maxLifetime); err != nil {
		return err
	}
	if err := svc.Create(r.Context(), rec); err != nil {
		switch {
		case errors.Is(err, ErrExists):
			p := api.NewProblem(http.StatusConflict, "click "+rec.ClickID.String()+" exists already and is never replaced; send another click_id, or none to get a random one")
			p.Field = "click_id"
			return p
		case errors.Is(err, ErrInvalidRecord):
			return api.BadRequest("body", invalidRecordDetail(err))
		}
		return err
	}
	w.Header().Set("Location", "/v1/clicks/"+rec.ClickID.String())
	api.WriteJSON(w, http.StatusCreated, postClickResponse{ClickID: rec.ClickID, ExpiresAt: rec.ExpiresAt.Truncate(time.Millisecond)})
	return nil
}

// DecodeClickRequest decodes and validates a POST /v1/clicks body: one JSON
// object in the Record form, at most limit bytes, read by
// api.UnmarshalStrict (no unknown field, no key given twice, every fault
// named by its JSON path, "device.ip", in words a client can act on).
// deep_link_url and clicked_at are required; deep_link_url, fallback_url
// and tracking_link must be absolute URLs. Errors are *api.Problem values
// naming the field.
func DecodeClickRequest(body io.Reader, limit int64) (*Record, error) {
	data, err := api.ReadBody(body, limit) // 413, 408, or a 400 without the connection's error
	if err != nil {
		return nil, err
	}
	rec := new(Record)
	if err := api.UnmarshalStrict(data, rec); err != nil {
		return nil, err
	}
	if err := validateClick(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

func validateClick(rec *Record) error {
	if rec.DeepLinkURL == "" {
		return api.BadRequest("deep_link_url", "required: the deep link the click resolves to")
	}
	if rec.ClickedAt.IsZero() {
		return api.BadRequest("clicked_at", "required: RFC 3339 time of the click")
	}
	for _, f := range []struct{ name, value string }{
		{"deep_link_url", rec.DeepLinkURL}, {"fallback_url", rec.FallbackURL}, {"tracking_link", rec.TrackingLink},
	} {
		if f.value == "" {
			continue
		}
		u, err := url.Parse(f.value)
		if err != nil || u.Scheme == "" {
			return api.BadRequest(f.name, fmt.Sprintf("%q is not an absolute URL (scheme://...)", truncateForError([]byte(f.value))))
		}
	}
	if rec.Device.IP.Zone() != "" {
		return api.BadRequest("device.ip", "an IP address with a zone is not allowed")
	}
	if err := validateRecordStrings(rec); err != nil {
		return api.BadRequest("body", invalidRecordDetail(err))
	}
	return nil
}

// invalidRecordDetail is the detail of a problem about an ErrInvalidRecord
// error: its message without the package's sentinel prefix.
func invalidRecordDetail(err error) string {
	return strings.TrimPrefix(err.Error(), ErrInvalidRecord.Error()+": ")
}

func pathClickID(r *http.Request) (ClickID, error) {
	raw := r.PathValue("id")
	id, err := ParseClickID(raw)
	if err != nil {
		return id, api.BadRequest("id", fmt.Sprintf("%q is not a UUID (8-4-4-4-12 hex digits)", truncateForError([]byte(raw))))
	}
	return id, nil
}

// mapStoreError turns a store error into a problem: 404 when there is no
// record, 410 when its expires_at has passed (Redis may not have evicted it
// yet), and 500 "corrupt click record" when the stored value is not a
// record (see unreadable). Other errors are the server's and are logged by
// api.
//
// A corrupt record is a 500, not a 4xx: the request is fine and nothing
// the client can change makes it succeed (422 would blame the body, 409 a
// state the client could resolve). The problem names the click id and says
// nothing was changed; the cause (codec, bytes) is only logged.
func (svc *Service) mapStoreError(id ClickID, err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return api.NewProblem(http.StatusNotFound, "no click "+id.String()+" (never stored, or expired)")
	case errors.Is(err, ErrExpired):
		return api.NewProblem(http.StatusGone, "click "+id.String()+" has expired")
	case unreadable(err):
		svc.log.Error("corrupt click record", "click_id", id.String(), "err", err)
		p := api.NewProblem(http.StatusInternalServerError, "the stored record of click "+id.String()+" is corrupt and cannot be served; it was left unchanged")
		p.Title = "corrupt click record"
		return p
	}
	return err
}

type getClickResponse struct {
	Record   *Record `json:"record"`
	Consumed bool    `json:"consumed"`
}

func (svc *Service) handleGet(w http.ResponseWriter, r *http.Request) error {
	id, err := pathClickID(r)
	if err != nil {
		return err
	}
	st, err := svc.Get(r.Context(), id)
	if err != nil {
		return svc.mapStoreError(id, err)
	}
	api.WriteJSON(w, http.StatusOK, getClickResponse{Record: st.Record, Consumed: st.Consumed})
	return nil
}

type resolveResponse struct {
	ClickID         ClickID `json:"click_id"`
	DeepLinkURL     string  `json:"deep_link_url"`
	FallbackURL     string  `json:"fallback_url,omitempty"`
	Consumed        bool    `json:"consumed"`
	AlreadyConsumed bool    `json:"already_consumed"`
}

func (svc *Service) handleResolve(w http.ResponseWriter, r *http.Request) error {
	id, err := pathClickID(r)
	if err != nil {
		return err
	}
	res, err := svc.Resolve(r.Context(), id)
	if err != nil {
		return svc.mapStoreError(id, err)
	}
	api.WriteJSON(w, http.StatusOK, resolveResponse{
		ClickID: id, DeepLinkURL: res.Record.DeepLinkURL, FallbackURL: res.Record.FallbackURL,
		Consumed: true, AlreadyConsumed: res.AlreadyConsumed,
	})
	return nil
}

type migrationResponse struct {
	Mode        Mode   `json:"mode"`
	AllowedNext []Mode `json:"allowed_next"`
	Report      Report `json:"report"`
}

func (svc *Service) migrationState(r *http.Request) (migrationResponse, error) {
	rep, err := svc.Report(r.Context())
	if err != nil {
		return migrationResponse{}, err
	}
	next := svc.Mode().NextModes()
	if svc.old == nil {
		next = []Mode{}
	}
	return migrationResponse{Mode: svc.Mode(), AllowedNext: next, Report: rep}, nil
}

func (svc *Service) handleGetMigration(w http.ResponseWriter, r *http.Request) error {
	state, err := svc.migrationState(r)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, state)
	return nil
}

func (svc *Service) handlePutMigration(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Mode string `json:"mode"`
	}
	if err := api.DecodeJSON(r, 4096, &req); err != nil {
		return err // 413 over 4 KB; 400 naming the field
	}
	m, err := ParseMode(req.Mode)
	if err != nil {
		return api.BadRequest("mode", err.Error(), modeNames()...)
	}
	if err := svc.SetMode(r.Context(), m); err != nil {
		if errors.Is(err, ErrModeTransition) {
			allowed := []string{}
			for _, n := range svc.Mode().NextModes() {
				allowed = append(allowed, string(n))
			}
			p := api.NewProblem(http.StatusConflict, err.Error())
			p.Field, p.Allowed = "mode", allowed
			return p
		}
		return err
	}
	state, err := svc.migrationState(r)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, state)
	return nil
}
