package feedbench

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// leanServer serves GET /n?size=N with a body of N bytes ('[' then 'x's) and
// counts the connections it accepted.
func leanServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func mustLeanRequest(t *testing.T, url string) leanRequest {
	t.Helper()
	req, err := newLeanRequest(url)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestLeanConnKeepAlive: bodies of several sizes, some larger than the read
// buffer, arrive whole over one connection; a non-200 status is an error with
// the body in it and leaves the connection usable.
func TestLeanConnKeepAlive(t *testing.T) {
	srv, conns := leanServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.Error(w, "no such thing", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet || r.Host == "" {
			http.Error(w, "bad request line", http.StatusBadRequest)
			return
		}
		body := "[" + strings.Repeat("x", len(r.URL.Query().Get("size"))*10_000) + "]"
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write([]byte(body))
	})
	c := newLeanConn(strings.TrimPrefix(srv.URL, "http://"), 5*time.Second)
	defer c.close()
	ctx := context.Background()
	for _, size := range []string{"", "a", "aaaa", "", "aa"} {
		body, err := c.get(ctx, mustLeanRequest(t, srv.URL+"/feed?size="+size))
		want := "[" + strings.Repeat("x", len(size)*10_000) + "]"
		if err != nil || string(body) != want {
			t.Fatalf("size %q: %d bytes (%v), want %d", size, len(body), err, len(want))
		}
	}
	_, err := c.get(ctx, mustLeanRequest(t, srv.URL+"/missing"))
	if err == nil || !strings.Contains(err.Error(), "status 404") || !strings.Contains(err.Error(), "no such thing") {
		t.Fatalf("404: err = %v, want the status and the body", err)
	}
	if body, err := c.get(ctx, mustLeanRequest(t, srv.URL+"/feed?size=a")); err != nil || len(body) != 10_002 {
		t.Fatalf("after the 404: %d bytes, %v", len(body), err)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 7 requests, want 1 (keep-alive)", n)
	}
	if _, err := c.get(ctx, mustLeanRequest(t, "http://127.0.0.1:1/feed")); err == nil {
		t.Error("a request for another server was sent")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.get(cancelled, mustLeanRequest(t, srv.URL+"/feed")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
}

// TestLeanConnRejectsUnframedBodies: a chunked body and a body without
// Content-Length are clear errors, not short or hanging reads.
func TestLeanConnRejectsUnframedBodies(t *testing.T) {
	srv, _ := leanServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("[1,"))
		w.(http.Flusher).Flush() // no Content-Length: chunked
		w.Write([]byte("2]"))
	})
	c := newLeanConn(strings.TrimPrefix(srv.URL, "http://"), 5*time.Second)
	defer c.close()
	if _, err := c.get(context.Background(), mustLeanRequest(t, srv.URL+"/")); err == nil || !strings.Contains(err.Error(), "Transfer-Encoding") {
		t.Errorf("chunked: err = %v, want a Transfer-Encoding error", err)
	}

	// A raw server: status and headers without Content-Length.
	addr := rawServer(t, func(conn net.Conn) {
		bufio.NewReader(conn).ReadString('\n')
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[]"))
	})
	c = newLeanConn(addr, 5*time.Second)
	defer c.close()
	if _, err := c.get(context.Background(), mustLeanRequest(t, "http://"+addr+"/")); err == nil || !strings.Contains(err.Error(), "without Content-Length") {
		t.Errorf("no Content-Length: err = %v, want a Content-Length error", err)
	}
}

// TestLeanConnServerCloses: a kept connection the server closed is dialed
// again transparently; a server that closes every connection without
// answering is an error after one new attempt, and so is a response cut short.
func TestLeanConnServerCloses(t *testing.T) {
	srv, conns := leanServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("close") != "" {
			w.Header().Set("Connection", "close")
		}
		w.Header().Set("Content-Length", "2")
		w.Write([]byte("[]"))
	})
	c := newLeanConn(strings.TrimPrefix(srv.URL, "http://"), 5*time.Second)
	defer c.close()
	ctx := context.Background()
	req := mustLeanRequest(t, srv.URL+"/")
	for i := range 3 {
		if _, err := c.get(ctx, req); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		srv.CloseClientConnections() // as an idle timeout would
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.get(ctx, mustLeanRequest(t, srv.URL+"/?close=1")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.get(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 5 {
		t.Errorf("%d connections, want 5: one per server close and one after Connection: close", n)
	}

	var accepted atomic.Int64
	addr := rawServer(t, func(conn net.Conn) {
		accepted.Add(1)
		bufio.NewReader(conn).ReadString('\n') // then close without a word
	})
	c = newLeanConn(addr, 5*time.Second)
	defer c.close()
	if _, err := c.get(ctx, mustLeanRequest(t, "http://"+addr+"/")); !errors.Is(err, errServerClosed) {
		t.Errorf("server that never answers: err = %v, want errServerClosed", err)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("a new connection was refused by the server and retried %d times, want no retry on a fresh one", n-1)
	}

	cut := rawServer(t, func(conn net.Conn) {
		bufio.NewReader(conn).ReadString('\n')
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n[1,2"))
	})
	c = newLeanConn(cut, 5*time.Second)
	defer c.close()
	if _, err := c.get(ctx, mustLeanRequest(t, "http://"+cut+"/")); err == nil || !strings.Contains(err.Error(), "read 10 body bytes") {
		t.Errorf("body cut short: err = %v", err)
	}
}

// rawServer accepts connections on loopback and runs handle on each, then
// closes it.
func rawServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				handle(conn)
			}()
		}
	}()
	return ln.Addr().String()
}
