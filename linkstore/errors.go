package linkstore

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these and add
// the values involved; test with errors.Is.
var (
	// ErrCorrupt: a stored value is truncated, has a bad header, or its
	// payload does not decode.
	ErrCorrupt = errors.New("linkstore: corrupt value")
	// ErrTooLarge: a value decodes (or would decode) to more than
	// Options.MaxDecodedSize bytes.
	ErrTooLarge = errors.New("linkstore: value too large")
	// ErrUnknownCodec: a codec name or format byte is not one this package knows.
	ErrUnknownCodec = errors.New("linkstore: unknown codec")
	// ErrWrongFormat: a value was written by a different codec than the one
	// asked to decode it.
	ErrWrongFormat = errors.New("linkstore: wrong value format")
	// ErrUnknownDictionary: a value names a dictionary version that is not loaded.
	ErrUnknownDictionary = errors.New("linkstore: unknown dictionary version")
	// ErrInvalidDictionary: dictionary bytes or version are unusable.
	ErrInvalidDictionary = errors.New("linkstore: invalid dictionary")
	// ErrInvalidRecord: a Record cannot be encoded or created as given.
	ErrInvalidRecord = errors.New("linkstore: invalid record")
	// ErrExists: a create found a record under the click id already; the
	// record is never replaced.
	ErrExists = errors.New("linkstore: click already exists")
	// ErrExpired: the record's expires_at has passed, though Redis may not
	// have evicted it yet.
	ErrExpired = errors.New("linkstore: click expired")
	// ErrInvalidUUID: a UUID text form does not parse.
	ErrInvalidUUID = errors.New("linkstore: invalid UUID")
	// ErrInvalidKey: a Redis key does not parse in the expected key format.
	ErrInvalidKey = errors.New("linkstore: invalid key")
	// ErrInvalidOptions: Options fail validation.
	ErrInvalidOptions = errors.New("linkstore: invalid options")
)
