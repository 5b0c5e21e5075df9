package catalog

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Use errors.Is; the messages wrapping them carry the values.
var (
	// ErrInvalidEvent: an event is well-formed JSON but breaks a rule
	// (unknown field, wrong type, out of range). Every *FieldError is one.
	ErrInvalidEvent = errors.New("catalog: invalid event")
	// ErrMalformedJSON: the body or one NDJSON line is not valid JSON.
	ErrMalformedJSON = errors.New("catalog: malformed JSON")
	// ErrEmptyBatch: the body holds no events.
	ErrEmptyBatch = errors.New("catalog: no events in body")
	// ErrWrongShop: the event belongs to another aggregate than the state.
	ErrWrongShop = errors.New("catalog: event for another shop")
	// ErrIncompleteShop: an upsert creates a shop but lacks some fields.
	ErrIncompleteShop = errors.New("catalog: new shop needs every field")
	// ErrIncompleteMenu: an upsert creates a menu but lacks some fields.
	ErrIncompleteMenu = errors.New("catalog: new menu needs every field")
	// ErrShopNotFound: a menu event for a shop that does not exist (never
	// created, or deleted).
	ErrShopNotFound = errors.New("catalog: shop does not exist")
)

// FieldError says which field of an event is wrong and how. Field is a path:
// "type", "fields.open", "fields.location.lat", "menus[2].price".
type FieldError struct {
	Field   string
	Problem string // e.g. `got "shoop", allowed: shop, menu`
}

func (e *FieldError) Error() string {
	return "field " + strconv.Quote(e.Field) + ": " + e.Problem
}

// Is makes errors.Is(err, ErrInvalidEvent) true for every FieldError.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidEvent }

// BatchError attaches an event's position in a batch to its error.
type BatchError struct {
	Index int // 0-based position of the event in the batch
	Line  int // 1-based line for NDJSON input; 0 when unknown (JSON array)
	Err   error
}

func (e *BatchError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("event %d (line %d): %v", e.Index, e.Line, e.Err)
	}
	return fmt.Sprintf("event %d: %v", e.Index, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// AtIndex wraps err with the position of the event in its batch, e.g.
// "event 3: field "type": ...". It returns nil for a nil err.
func AtIndex(index int, err error) error {
	if err == nil {
		return nil
	}
	return &BatchError{Index: index, Err: err}
}

func fieldErr(field, problem string) error { return &FieldError{Field: field, Problem: problem} }

func fieldErrf(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}
