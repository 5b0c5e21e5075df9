package api

import (
	"encoding/json"
	"errors"
	"net/http"
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

// WriteProblem writes err as a problem body. A *Problem keeps its status;
// a body over the size limit is 413; anything else is a 500 whose detail is
// generic, so internal errors never leak to clients (they are logged).
func WriteProblem(w http.ResponseWriter, err error) {
	var p *Problem
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &p):
	case errors.As(err, &tooBig):
		p = NewProblem(http.StatusRequestEntityTooLarge, "request body is larger than the limit of "+itoa(tooBig.Limit)+" bytes")
	default:
		p = NewProblem(http.StatusInternalServerError, "internal error; see the server log")
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
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
