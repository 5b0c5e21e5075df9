package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// DefaultRetryAfter is the Retry-After of a 503 whose error does not say
// how long to wait: about the time OpenSearch takes to promote a replica or
// a Redis or PostgreSQL client to reconnect.
const DefaultRetryAfter = 5 * time.Second

// UnavailableError is an error of a backend or a layout that cannot answer
// now (unreachable, failed shards, a red index, a timeout). The server
// answers it 503 with Retry-After, naming What and nothing of Err.
type UnavailableError struct {
	// What names the unavailable part for clients: "layout split",
	// "redis", "postgresql", "opensearch".
	What string
	// RetryAfter is the client's wait before retrying; 0 means
	// DefaultRetryAfter.
	RetryAfter time.Duration
	// Reason, if set, says why in words fit for clients (no internals);
	// it is added to the problem's detail.
	Reason string
	// Err is the cause, logged and never sent.
	Err error
}

// Unavailable wraps err as a 503 naming what is unavailable.
func Unavailable(what string, retryAfter time.Duration, err error) *UnavailableError {
	return &UnavailableError{What: what, RetryAfter: retryAfter, Err: err}
}

func (e *UnavailableError) Error() string {
	if e.Err == nil {
		return e.What + " is unavailable"
	}
	return e.What + " is unavailable: " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// BackendUnavailable is implemented by backend client errors that can say
// whether they mean the backend cannot answer now: UnavailableBackend
// returns the backend's name ("opensearch", "redis", "postgresql") when so,
// and "" when the error is of another kind (a refused request, a bug).
// Backend packages implement it so that api needs none of their types.
type BackendUnavailable interface {
	UnavailableBackend() string
}

// IsUnavailable reports whether err means a backend cannot answer now, and
// names it ("a backend" when the error does not say which): an
// UnavailableError, an error implementing BackendUnavailable, or, from any
// client, a network error (refused, reset, timed out) or a deadline. A
// cancelled context is not: that is the client going away.
func IsUnavailable(err error) (what string, ok bool) {
	if err == nil || errors.Is(err, context.Canceled) {
		return "", false
	}
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return ue.What, true
	}
	// Every error in the chain (errors.Join included) may say which backend.
	var found string
	walk(err, func(e error) bool {
		if b, ok := e.(BackendUnavailable); ok {
			found = b.UnavailableBackend()
		}
		return found != ""
	})
	if found != "" {
		return found, true
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return "a backend", true
	}
	return "", false
}

// walk calls f on err and every error it wraps, depth first, until f
// returns true.
func walk(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if walk(e, f) {
				return true
			}
		}
	}
	return false
}

// unavailableProblem is the 503 problem of an unavailable part.
func unavailableProblem(what, reason string, retryAfter time.Duration) *Problem {
	if retryAfter <= 0 {
		retryAfter = DefaultRetryAfter
	}
	secs := int((retryAfter + time.Second - 1) / time.Second)
	detail := what + " is unavailable; retry after " + strconv.Itoa(secs) + " s"
	if reason != "" {
		detail += ": " + reason
	}
	p := NewProblem(http.StatusServiceUnavailable, detail)
	p.Unavailable, p.RetryAfter = what, retryAfter
	return p
}

// DeadlineError is a request that ran past its own deadline (a search
// that took longer than --search-timeout). It says nothing about the
// backend or the layout, which answer other requests as before: the server
// answers it 503 with Retry-After for this request only, with Detail.
type DeadlineError struct {
	// Deadline is the time the request was given.
	Deadline time.Duration
	// Hint says how a client can make the request cheaper, if it can.
	Hint string
	// RetryAfter is the client's wait before retrying; 0 means
	// DefaultRetryAfter.
	RetryAfter time.Duration
	// Err is the cause, logged and never sent.
	Err error
}

func (e *DeadlineError) Error() string {
	return "ran past its deadline of " + e.Deadline.String() + ": " + e.Err.Error()
}

func (e *DeadlineError) Unwrap() error { return e.Err }

// deadlineProblem is the 503 problem of a request past its deadline.
func deadlineProblem(e *DeadlineError) *Problem {
	retryAfter := e.RetryAfter
	if retryAfter <= 0 {
		retryAfter = DefaultRetryAfter
	}
	detail := "the request ran past its deadline of " + e.Deadline.String() + " and was stopped; retry after " +
		strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)) + " s"
	if e.Hint != "" {
		detail += ", or " + e.Hint
	}
	p := NewProblem(http.StatusServiceUnavailable, detail)
	p.RetryAfter = retryAfter
	return p
}
