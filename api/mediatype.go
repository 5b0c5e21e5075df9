package api

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// The media types of the request bodies the routes take.
const (
	// MediaTypeJSON is a JSON body: every route that takes a body takes it.
	MediaTypeJSON = "application/json"
	// MediaTypeNDJSON is newline-delimited JSON, one value per line (POST
	// /v1/events).
	MediaTypeNDJSON = "application/x-ndjson"
)

// CheckBodyMediaType refuses, with a 415 problem, a request body the route
// cannot read as sent: a Content-Encoding other than identity (the server
// decodes none: the field is "Content-Encoding", allowed "identity"), or a
// Content-Type that is not one of accepted (the field is "Content-Type",
// allowed the accepted types). A media type matches in any letter case,
// with no parameter but charset=utf-8, since a body is read as UTF-8 only.
// A request without Content-Type is taken as the route's type, since
// clients and tests of this repository send none (a browser cannot send a
// body across origins without a type either way: fetch without one sends
// text/plain). Callers check a non-empty body only: an empty one has
// nothing to misread.
func CheckBodyMediaType(h http.Header, accepted ...string) error {
	for _, v := range h.Values("Content-Encoding") {
		for _, coding := range strings.Split(v, ",") {
			if coding = strings.TrimSpace(coding); coding != "" && !strings.EqualFold(coding, "identity") {
				return unsupportedMediaType("Content-Encoding", fmt.Sprintf("the body is sent with Content-Encoding %q, which this server does not decode: send it uncompressed, without Content-Encoding", truncate(coding, 40)), "identity")
			}
		}
	}
	types := h.Values("Content-Type")
	switch len(types) {
	case 0:
		return nil
	case 1:
	default:
		return unsupportedMediaType("Content-Type", "Content-Type is given more than once: give it once", accepted...)
	}
	mediaType, params, err := mime.ParseMediaType(types[0])
	if err != nil {
		return unsupportedMediaType("Content-Type", fmt.Sprintf("%q is not a media type: send %s", truncate(types[0], 60), strings.Join(accepted, " or ")), accepted...)
	}
	if !slices.Contains(accepted, mediaType) {
		return unsupportedMediaType("Content-Type", fmt.Sprintf("the body is sent as %q; this route takes %s", truncate(mediaType, 60), strings.Join(accepted, " or ")), accepted...)
	}
	for name, value := range params {
		if name != "charset" {
			return unsupportedMediaType("Content-Type", fmt.Sprintf("the media type parameter %q is not supported: send %s, optionally with charset=utf-8", truncate(name, 40), mediaType), accepted...)
		}
		if !strings.EqualFold(value, "utf-8") {
			return unsupportedMediaType("Content-Type", fmt.Sprintf("charset %q is not supported: the body must be UTF-8 (charset=utf-8, or no charset)", truncate(value, 40)), accepted...)
		}
	}
	return nil
}

func unsupportedMediaType(field, detail string, allowed ...string) *Problem {
	p := NewProblem(http.StatusUnsupportedMediaType, detail)
	p.Field, p.Allowed = field, allowed
	return p
}
