// Package clustertest starts a real NATS server with JetStream in the test's
// process, on a free loopback port and a temporary store, for the tests of
// package cluster and of the server wired to it.
package clustertest

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded NATS server that a test may stop and start again on
// the same port and store, as a NATS restart.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
}

// Start starts a NATS server with JetStream for t; it stops when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, nil)
}

// StartWith is Start with the server's options changed by configure first
// (users and their permissions, say).
func StartWith(t testing.TB, configure func(*server.Options)) *Server {
	t.Helper()
	s := &Server{t: t, opts: server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}}
	if configure != nil {
		configure(&s.opts)
	}
	s.start()
	// Restarts reuse the port the first start got.
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	o := s.opts
	srv, err := server.NewServer(&o)
	if err != nil {
		s.t.Fatalf("nats server: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		s.t.Fatal("nats server did not become ready")
	}
	s.srv = srv
}

// URL is the server's client URL.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Stop shuts the server down; clients see it as gone.
func (s *Server) Stop() {
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
}

// Restart starts a stopped server again on the same port and store.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Addr is the server's client address, host:port.
func (s *Server) Addr() string { return s.srv.Addr().String() }

// MonitorURL is the server's monitoring address (http://host:port), when
// its options gave it an HTTP port; "" otherwise.
func (s *Server) MonitorURL() string {
	if a := s.srv.MonitorAddr(); a != nil {
		return "http://" + a.String()
	}
	return ""
}
