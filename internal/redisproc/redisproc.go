// Package redisproc starts a private redis-server for one benchmark or test
// that must be the only client of its server (used_memory is a server-wide
// figure): on a free loopback port, with no persistence, in a temporary
// directory, stopped by its PID.
package redisproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server this process started.
type Server struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Start starts binary (a redis-server or valkey-server) on a free loopback
// port with no persistence and extra settings ("--name value" pairs), and
// waits up to 15 s for PING.
func Start(ctx context.Context, binary string, extra []string) (*Server, error) {
	path, err := exec.LookPath(binary)
	if err != nil {
		return nil, fmt.Errorf("redisproc: %q not found (install redis-server): %w", binary, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "baedal-redis-")
	if err != nil {
		return nil, err
	}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--dir", dir, "--databases", "16", "--protected-mode", "yes", "--logfile", filepath.Join(dir, "redis.log")}
	cmd := exec.Command(path, append(args, extra...)...)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisproc: start %s: %w", path, err)
	}
	s := &Server{cmd: cmd, addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, DialTimeout: time.Second})
	defer rdb.Close()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := rdb.Ping(ctx).Err(); err == nil {
			return s, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Stop()
			return nil, fmt.Errorf("redisproc: %s on %s did not answer PING within 15s (log: %s)", path, s.addr, filepath.Join(dir, "redis.log"))
		}
	}
}

// Stop ends the server by its PID (SIGTERM, then SIGKILL after 10 s) and
// removes its directory.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(s.dir)
}
