package backend

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// maxResponseBytes caps how much of an OpenSearch response is read into memory.
const maxResponseBytes = 64 << 20

// decodeJSON decodes a successful OpenSearch response, or turns an error
// status into an error carrying the start of its body.
func decodeJSON(resp *http.Response, v any) error {
	body := io.LimitReader(resp.Body, maxResponseBytes)
	if resp.StatusCode >= 300 {
		head, _ := io.ReadAll(io.LimitReader(body, 512))
		return fmt.Errorf("backend: %s %s: HTTP %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, head)
	}
	return json.NewDecoder(body).Decode(v)
}
