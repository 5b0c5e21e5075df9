package feedbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// leanConn is the load generator of the benchmark's read runs: a minimal
// HTTP/1.1 keep-alive client for one goroutine, in the spirit of wrk. The
// benchmark's clients share two cores with the server they measure; net/http's
// client (a connection pool, a read and a write goroutine per connection, a
// Request and Response per call) cost about as much CPU as the server's
// handling, so it took the server's CPU. leanConn writes prepared GET request
// bytes on one connection and reads the response in the same goroutine.
//
// It only understands what the feed server answers: a status line, headers
// with a Content-Length, and that many body bytes. Chunked bodies, a missing
// Content-Length and a status other than 200 are errors. When the server
// closed the connection (idle timeout, restart) before answering, it dials
// again and sends the request once more; a GET can be repeated.
type leanConn struct {
	addr    string        // host:port
	timeout time.Duration // bound of one request, dial included
	conn    net.Conn      // nil: dial on the next request
	br      *bufio.Reader
	body    []byte // the last body, reused
}

// leanRequest is the bytes of a GET request of a path on a server.
type leanRequest struct {
	addr string // host:port
	raw  []byte
}

// newLeanRequest prepares GET rawURL (http only).
func newLeanRequest(rawURL string) (leanRequest, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return leanRequest{}, err
	}
	if u.Scheme != "http" || u.Host == "" {
		return leanRequest{}, fmt.Errorf("lean client: %q is not an http://host URL", rawURL)
	}
	raw := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAccept: application/json\r\n\r\n"
	return leanRequest{addr: u.Host, raw: []byte(raw)}, nil
}

// newLeanConn returns a client of the server at addr; it dials on first use.
func newLeanConn(addr string, timeout time.Duration) *leanConn {
	return &leanConn{addr: addr, timeout: timeout}
}

// errServerClosed says the server closed the connection before the response
// started: the request can be sent again on a new connection.
var errServerClosed = errors.New("lean client: server closed the connection")

// get sends req and reads its response; it returns the body, valid until the
// next call, when the status is 200. ctx is checked before the request; the
// request itself is bounded by the client's timeout.
func (c *leanConn) get(ctx context.Context, req leanRequest) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.addr != c.addr {
		return nil, fmt.Errorf("lean client: request for %s on a client of %s", req.addr, c.addr)
	}
	deadline := time.Now().Add(c.timeout)
	reused := c.conn != nil
	body, err := c.roundTrip(req.raw, deadline)
	if errors.Is(err, errServerClosed) && reused {
		// The kept connection was closed by the server while idle.
		body, err = c.roundTrip(req.raw, deadline)
	}
	return body, err
}

// roundTrip sends one request and reads its response, dialing first if
// needed. The connection is closed after any error but a status other than
// 200 (whose body was read whole), and when the server asked for it.
func (c *leanConn) roundTrip(raw []byte, deadline time.Time) ([]byte, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, time.Until(deadline))
		if err != nil {
			return nil, err
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 16<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	body, keep, err := c.exchange(raw, deadline)
	if !keep {
		c.close()
	}
	return body, err
}

// exchange writes raw and reads one response on the open connection. keep
// says whether the connection may be used again: false after every error but
// a status other than 200.
func (c *leanConn) exchange(raw []byte, deadline time.Time) (body []byte, keep bool, err error) {
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, false, err
	}
	if _, err := c.conn.Write(raw); err != nil {
		return nil, false, errServerClosedOr(err)
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if len(line) == 0 && (errors.Is(err, io.EOF) || isConnReset(err)) {
			return nil, false, errServerClosed
		}
		return nil, false, fmt.Errorf("lean client: read status line: %w", err)
	}
	status, err := parseStatusLine(line)
	if err != nil {
		return nil, false, err
	}
	length, keep := -1, true
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return nil, false, fmt.Errorf("lean client: read headers: %w", err)
		}
		if len(line) <= 2 { // "\r\n" (or a bare "\n"): end of the headers
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, false, fmt.Errorf("lean client: header line %q has no colon", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 {
				return nil, false, fmt.Errorf("lean client: Content-Length %q", value)
			}
			length = n
		case asciiEqualFold(name, "transfer-encoding"):
			return nil, false, fmt.Errorf("lean client: Transfer-Encoding %q is not supported (status %d)", value, status)
		case asciiEqualFold(name, "connection"):
			if asciiEqualFold(value, "close") {
				keep = false
			}
		}
	}
	if length < 0 {
		return nil, false, fmt.Errorf("lean client: status %d without Content-Length", status)
	}
	if length > 8<<20 {
		return nil, false, fmt.Errorf("lean client: status %d with a body of %d bytes", status, length)
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	body = c.body[:length]
	if _, err := io.ReadFull(c.br, body); err != nil {
		return nil, false, fmt.Errorf("lean client: read %d body bytes: %w", length, err)
	}
	if status != 200 {
		return nil, keep, fmt.Errorf("lean client: status %d: %.200s", status, body)
	}
	return body, keep, nil
}

// parseStatusLine returns the status code of an HTTP/1.1 status line.
func parseStatusLine(line []byte) (int, error) {
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 13 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || line[12] != ' ' && line[12] != '\r' {
		return 0, fmt.Errorf("lean client: status line %q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("lean client: status line %q", line)
	}
	return code, nil
}

// asciiEqualFold says whether b equals the lower-case ASCII s, ignoring case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// errServerClosedOr maps a write error on a connection the server closed to
// errServerClosed.
func errServerClosedOr(err error) error {
	if isConnReset(err) {
		return errServerClosed
	}
	return err
}

// isConnReset says whether err is the peer's reset or a write on a
// connection it closed.
func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// close closes the connection; the next request dials again.
func (c *leanConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
