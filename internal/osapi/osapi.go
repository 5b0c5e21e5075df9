// Package osapi sends raw JSON requests to OpenSearch through the
// opensearch-go transport (retries, node selection, timeouts) and turns error
// statuses into errors that carry the status and the start of the body.
//
// Invariant: a response body is always closed and never read beyond MaxBody.
package osapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/opensearch-project/opensearch-go/v4"
)

// MaxBody caps how much of a response is read.
const MaxBody = 256 << 20

// StatusError is an OpenSearch error response.
type StatusError struct {
	Method, Path string
	Status       int
	Body         string // the first 1 KB
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("opensearch %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

// UnavailableBackend names OpenSearch when the status means it cannot
// answer now (429, 502, 503, 504: overloaded, no shard copy available, all
// shards failed, a red index, a gateway timeout), and is "" otherwise
// (api.BackendUnavailable).
func (e *StatusError) UnavailableBackend() string {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return "opensearch"
	}
	return ""
}

// TransportError is a request that got no response: no endpoint reachable,
// a connection reset, a timeout.
type TransportError struct {
	Method, Path string
	Err          error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("opensearch %s %s: %v", e.Method, e.Path, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// UnavailableBackend names OpenSearch unless the caller cancelled the
// request (api.BackendUnavailable).
func (e *TransportError) UnavailableBackend() string {
	if errors.Is(e.Err, context.Canceled) {
		return ""
	}
	return "opensearch"
}

// IsStatus reports whether err is an OpenSearch response with that status.
func IsStatus(err error, status int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == status
}

// Retryable reports whether an error is worth retrying: 429, 5xx, or a
// transport error (connection refused, timeout).
func Retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status == http.StatusTooManyRequests || se.Status >= 500
	}
	return err != nil
}

// Client sends requests.
type Client struct {
	os *opensearch.Client
}

// New wraps an opensearch-go client.
func New(c *opensearch.Client) *Client { return &Client{os: c} }

// Do sends body (nil for none) and decodes a 2xx JSON response into out
// (nil to discard). contentType defaults to application/json.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, out any) error {
	return c.DoContentType(ctx, method, path, "application/json", body, out)
}

// DoContentType is Do with an explicit content type (application/x-ndjson for _bulk).
func (c *Client) DoContentType(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	return c.do(ctx, method, path, contentType, body, out, false)
}

// DoAnyStatus is Do for an API whose error answers carry the body of its
// answers (the baedal-hot plugin's status answers 503 with every node that
// answered, and the failures): the JSON body is decoded into out whatever
// the status, and a status >= 300 is still a *StatusError.
func (c *Client) DoAnyStatus(ctx context.Context, method, path string, body []byte, out any) error {
	return c.do(ctx, method, path, "application/json", body, out, true)
}

func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any, decodeErrors bool) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return fmt.Errorf("opensearch %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.os.Perform(req)
	if err != nil {
		return &TransportError{Method: method, Path: path, Err: err}
	}
	defer resp.Body.Close()
	limited := io.LimitReader(resp.Body, MaxBody)
	if resp.StatusCode >= 300 && decodeErrors && out != nil {
		raw, _ := io.ReadAll(limited)
		_ = json.Unmarshal(raw, out) // a body of another shape leaves out as it was
		return &StatusError{Method: method, Path: path, Status: resp.StatusCode, Body: string(raw[:min(len(raw), 1024)])}
	}
	if resp.StatusCode >= 300 {
		head, _ := io.ReadAll(io.LimitReader(limited, 1024))
		io.Copy(io.Discard, limited)
		return &StatusError{Method: method, Path: path, Status: resp.StatusCode, Body: string(head)}
	}
	if out == nil {
		_, err = io.Copy(io.Discard, limited)
		return err
	}
	if raw, ok := out.(*[]byte); ok {
		*raw, err = io.ReadAll(limited)
		return err
	}
	if err := json.NewDecoder(limited).Decode(out); err != nil {
		return fmt.Errorf("opensearch %s %s: decode response: %w", method, path, err)
	}
	return nil
}
