package eventlog

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/catalog"
)

// AppendResponse is the body of a 202 answer to POST /v1/events.
type AppendResponse struct {
	Accepted int      `json:"accepted"`
	IDs      []string `json:"ids"` // stream id of each event, in request order
}

// RegisterRoutes adds POST /v1/events to s. The body (a JSON array of events
// or NDJSON, capped by the server's body limit) is validated whole first: any
// invalid event answers 400 with a problem naming the event's position, the
// field and the allowed values, and nothing is appended. Otherwise every
// event is appended and the answer, 202 with the stream ids, is sent only
// after Redis acknowledged the appends.
func RegisterRoutes(s *api.Server, l *Log) {
	s.Handle("POST /v1/events", l.handleAppend)
}

func (l *Log) handleAppend(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err // *http.MaxBytesError → 413; others → 500
	}
	events, err := catalog.ParseEvents(body)
	if err != nil {
		return EventsProblem(err)
	}
	ids, err := l.Append(r.Context(), events)
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(events), err)
	}
	api.WriteJSON(w, http.StatusAccepted, AppendResponse{Accepted: len(ids), IDs: ids})
	return nil
}

// EventsProblem turns a catalog.ParseEvents error into a 400 problem whose
// field is the event's position and field path, e.g. "[3].fields.open", and
// whose allowed values come from the validation message when it lists them.
func EventsProblem(err error) *api.Problem {
	if errors.Is(err, catalog.ErrEmptyBatch) {
		return api.BadRequest("body", "no events: send a JSON array of events or NDJSON, one event per line")
	}
	field := "body"
	var be *catalog.BatchError
	if errors.As(err, &be) {
		field = fmt.Sprintf("[%d]", be.Index)
	}
	var fe *catalog.FieldError
	var allowed []string
	if errors.As(err, &fe) {
		field += "." + fe.Field
		if _, list, ok := strings.Cut(fe.Problem, "allowed: "); ok {
			for _, v := range strings.Split(list, ",") {
				if v = strings.TrimSpace(v); v != "" {
					allowed = append(allowed, v)
				}
			}
		}
	}
	return api.BadRequest(field, err.Error(), allowed...)
}
