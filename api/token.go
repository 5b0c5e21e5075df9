package api

import "crypto/subtle"

// tokenEqual compares in constant time, so the token cannot be guessed byte
// by byte from response times.
func tokenEqual(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
