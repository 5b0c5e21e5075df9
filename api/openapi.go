package api

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openAPIDocument is the OpenAPI 3.1 description of every route baedal's
// server registers (app.Run), problem bodies and limits included. It is
// data, not code: the tests of package app fail when a registered route has
// no operation in it or it lists one the server does not register, and they
// validate real requests and responses against it (api/openapitest).
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns a copy of the embedded OpenAPI document (JSON).
func OpenAPIDocument() []byte {
	return append([]byte(nil), openAPIDocument...)
}

// ServeOpenAPI answers GET /openapi.json with the embedded document.
func ServeOpenAPI(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openAPIDocument)))
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
	return nil
}
