package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Problem is an RFC 9457 problem body. Every error the API returns is one.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Field names the request field at fault, when there is one.
	Field string `json:"field,omitempty"`
	// Allowed lists the values the field accepts, when it is an enum.
	Allowed []string `json:"allowed,omitempty"`
	// Unavailable names the backend or layout that cannot answer now (503).
	Unavailable string `json:"unavailable,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter time.Duration `json:"-"`
}

// Error lets handlers return a problem as an error.
func (p *Problem) Error() string { return p.Title + ": " + p.Detail }

// BadRequest is a 400 problem about one field.
func BadRequest(field, detail string, allowed ...string) *Problem {
	return &Problem{Type: "about:blank", Title: "invalid request", Status: http.StatusBadRequest, Field: field, Detail: detail, Allowed: allowed}
}

// NewProblem builds a problem with a status and a detail.
func NewProblem(status int, detail string) *Problem {
	return &Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
}

// ProblemOf is the one mapping from errors to HTTP for the whole server. A
// *Problem keeps its status; a body over the size limit is 413; a backend or
// layout that cannot answer now (IsUnavailable) is 503 with Retry-After,
// naming it; a request past its own deadline (DeadlineError) is 503 with
// Retry-After, naming nothing; anything else is a 500 whose detail is
// generic. Details never carry internals: the error itself is logged, not
// sent.
func ProblemOf(err error) *Problem {
	var p *Problem
	var tooBig *http.MaxBytesError
	var ue *UnavailableError
	var de *DeadlineError
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &tooBig):
		return NewProblem(http.StatusRequestEntityTooLarge, "request body is larger than the limit of "+itoa(tooBig.Limit)+" bytes")
	case errors.As(err, &de):
		return deadlineProblem(de)
	case errors.As(err, &ue):
		return unavailableProblem(ue.What, ue.Reason, ue.RetryAfter)
	}
	if what, ok := IsUnavailable(err); ok {
		return unavailableProblem(what, "", 0)
	}
	return NewProblem(http.StatusInternalServerError, "internal error; see the server log")
}

// WriteProblem writes err as a problem body (ProblemOf), with Retry-After
// when the problem has one.
func WriteProblem(w http.ResponseWriter, err error) {
	p := ProblemOf(err)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((p.RetryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// WriteJSON writes v with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
