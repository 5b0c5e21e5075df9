package feed

import (
	"errors"
	"fmt"
)

// Sentinel errors; the HTTP layer maps them to problem bodies (problemFor).
var (
	ErrUnknownUser   = errors.New("feed: unknown user")
	ErrUnknownPost   = errors.New("feed: unknown post")
	ErrSelfFollow    = errors.New("feed: a user cannot follow themselves")
	ErrUsernameTaken = errors.New("feed: username is taken")
	ErrInvalid       = errors.New("feed: invalid input")
)

// InvalidError is bad input about one field, with the values it accepts.
type InvalidError struct {
	Field   string
	Detail  string
	Allowed []string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("feed: %s: %s", e.Field, e.Detail) }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// UnknownUserError names the user id that does not exist.
type UnknownUserError struct{ ID int64 }

func (e *UnknownUserError) Error() string { return fmt.Sprintf("feed: user %d does not exist", e.ID) }

// Unwrap makes errors.Is(err, ErrUnknownUser) true.
func (e *UnknownUserError) Unwrap() error { return ErrUnknownUser }
