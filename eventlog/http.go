package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/catalog"
)

// AppendResponse is the body of a 202 answer to POST /v1/events.
type AppendResponse struct {
	Accepted int      `json:"accepted"`
	IDs      []string `json:"ids"` // stream id of each event, in request order
}

// RegisterRoutes adds POST /v1/events and the dead-letter admin routes to s.
//
// POST /v1/events: the body (a JSON array of events or NDJSON, capped by the
// server's body limit) is validated whole first: any invalid event answers
// 400 with a problem naming the event's position, the field and the allowed
// values, and nothing is appended. Otherwise every event is appended and the
// answer, 202 with the stream ids, is sent only after Redis acknowledged the
// appends.
//
// What the API checks is what it knows without reading any state: syntax,
// types, ranges (a shop id above catalog.MaxShopID), and that one batch does
// not attach a menu id to two shops. Whether a shop exists, or whether a
// menu id already belongs to another shop from an earlier batch, only the
// indexer knows when it applies the event, asynchronously: such an event is
// accepted (202) and, if it cannot be applied, goes to the dead-letter
// stream with its reason. Operators see and handle those through the admin
// routes (token required):
//
//	GET    /v1/admin/dead-letters?limit=&after=   oldest first, with reason kinds and the total
//	POST   /v1/admin/dead-letters/{id}/replay     append the event again (after fixing its cause)
//	DELETE /v1/admin/dead-letters/{id}            drop it for good
//
// and the metric baedal_eventlog_dead_lettered_total{reason} counts them by
// kind (ReasonKind).
func RegisterRoutes(s *api.Server, l *Log) {
	s.Handle("POST /v1/events", l.handleAppend, api.Body(api.MediaTypeJSON, api.MediaTypeNDJSON))
	s.HandleAdmin("GET /v1/admin/dead-letters", l.handleListDeadLetters, api.Params("limit", "after"))
	s.HandleAdmin("POST /v1/admin/dead-letters/{id}/replay", l.handleReplayDeadLetter)
	s.HandleAdmin("DELETE /v1/admin/dead-letters/{id}", l.handleDropDeadLetter)
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
	if err := checkMenuOwners(events); err != nil {
		return err
	}
	ids, err := l.Append(r.Context(), events)
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(events), err)
	}
	api.WriteJSON(w, http.StatusAccepted, AppendResponse{Accepted: len(ids), IDs: ids})
	return nil
}

// checkMenuOwners refuses a batch that attaches one menu id to two shops (a
// menu event's shop_id, or a full shop upsert's menus). Menu ids are meant
// to be global (catalog.MenuID gives each shop its own range), and search
// results name matched menus by id, so one id in two shops is ambiguous.
// Within one event the catalog already refuses a repeated menu id; across
// batches the check needs the indexed state (documents are per shop), so a
// later batch can still reuse a menu id of another shop: not checked.
func checkMenuOwners(events []catalog.Event) error {
	owner := make(map[int64]int64)
	claim := func(menuID, shopID int64, field string) error {
		if prev, ok := owner[menuID]; ok && prev != shopID {
			return api.BadRequest(field, fmt.Sprintf("menu %d belongs to shop %d earlier in this batch, not to shop %d", menuID, prev, shopID))
		}
		owner[menuID] = shopID
		return nil
	}
	for i, ev := range events {
		switch {
		case ev.Type == catalog.EntityMenu:
			if err := claim(ev.ID, ev.ShopID, fmt.Sprintf("[%d].shop_id", i)); err != nil {
				return err
			}
		case ev.Menus != nil:
			for j, m := range ev.Menus {
				if err := claim(m.ID, ev.ID, fmt.Sprintf("[%d].menus[%d].id", i, j)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// maxDeadLetterPage caps the limit parameter of the dead-letter list.
const maxDeadLetterPage = 1000

// deadLetterView is one dead letter in the admin API.
type deadLetterView struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Reason   string          `json:"reason"`
	Event    json.RawMessage `json:"event,omitempty"` // the event, when it is JSON
	Raw      string          `json:"raw,omitempty"`   // else the entry as stored
	Stream   string          `json:"stream"`
	EntryID  string          `json:"entry_id"`
	Group    string          `json:"group"`
	Attempts int64           `json:"attempts"`
}

// deadLetterPage is the body of GET /v1/admin/dead-letters.
type deadLetterPage struct {
	Total       int64            `json:"total"` // entries in the dead-letter stream
	DeadLetters []deadLetterView `json:"dead_letters"`
	// NextAfter is the after parameter of the next page; empty on the last.
	NextAfter string `json:"next_after,omitempty"`
}

func (l *Log) handleListDeadLetters(w http.ResponseWriter, r *http.Request) error {
	q, err := api.Query(r)
	if err != nil {
		return err
	}
	limit := int64(100)
	if raw := q.Get("limit"); raw != "" {
		if limit, err = api.ParseInt("limit", raw, 1, maxDeadLetterPage); err != nil {
			return err
		}
	}
	after := q.Get("after")
	if after != "" && !isStreamID(after) {
		return api.BadRequest("after", fmt.Sprintf("got %q, want a dead-letter id such as 1700000000000-0", truncate(after, 40)))
	}
	total, err := l.DeadLetterCount(r.Context())
	if err != nil {
		return err
	}
	recs, err := l.DeadLettersAfter(r.Context(), after, limit)
	if err != nil {
		return err
	}
	page := deadLetterPage{Total: total, DeadLetters: make([]deadLetterView, len(recs))}
	for i, rec := range recs {
		v := deadLetterView{ID: rec.ID, Kind: ReasonKind(rec.Reason), Reason: rec.Reason, Stream: rec.Stream, EntryID: rec.EntryID, Group: rec.Group, Attempts: rec.Attempts}
		if json.Valid([]byte(rec.Raw)) {
			v.Event = json.RawMessage(rec.Raw)
		} else {
			v.Raw = rec.Raw
		}
		page.DeadLetters[i] = v
	}
	if int64(len(recs)) == limit {
		page.NextAfter = recs[len(recs)-1].ID
	}
	api.WriteJSON(w, http.StatusOK, page)
	return nil
}

func (l *Log) handleReplayDeadLetter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathDeadLetterID(r)
	if err != nil {
		return err
	}
	newID, err := l.ReplayDeadLetter(r.Context(), id)
	if err != nil {
		return deadLetterProblem(err)
	}
	api.WriteJSON(w, http.StatusOK, map[string]string{"replayed": id, "id": newID})
	return nil
}

func (l *Log) handleDropDeadLetter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathDeadLetterID(r)
	if err != nil {
		return err
	}
	if err := l.DropDeadLetter(r.Context(), id); err != nil {
		return deadLetterProblem(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func pathDeadLetterID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !isStreamID(id) {
		return "", api.BadRequest("id", fmt.Sprintf("got %q, want a dead-letter id such as 1700000000000-0", truncate(id, 40)))
	}
	return id, nil
}

// deadLetterProblem maps the dead-letter errors: unknown 404, an entry that
// holds no valid event 409 (drop it instead); others are the server's.
func deadLetterProblem(err error) error {
	switch {
	case errors.Is(err, ErrDeadLetterNotFound):
		p := api.NewProblem(http.StatusNotFound, err.Error())
		p.Field = "id"
		return p
	case errors.Is(err, ErrNotReplayable):
		p := api.NewProblem(http.StatusConflict, err.Error()+"; drop it with DELETE")
		p.Field = "id"
		return p
	}
	return err
}

// isStreamID reports whether s is a complete stream id, "ms-seq", both
// canonical decimals.
func isStreamID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		return false
	}
	for _, part := range []string{ms, seq} {
		if part == "" || len(part) > 20 || (len(part) > 1 && part[0] == '0') {
			return false
		}
		if _, err := strconv.ParseUint(part, 10, 64); err != nil {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// EventsProblem turns a catalog.ParseEvents error into a 400 problem whose
// field is the event's position and field path, e.g. "[3].fields.open", and
// whose allowed values come from the validation message when it lists them.
// The body's text, duplicate keys included, was checked before
// (api.CheckBodyText), so no key an event holds twice reaches the parse.
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
	// The sentinels' package prefix ("catalog: malformed JSON") is Go's
	// naming, not the client's business.
	return api.BadRequest(field, strings.ReplaceAll(err.Error(), "catalog: ", ""), allowed...)
}
