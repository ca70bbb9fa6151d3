package web

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

// fasthttp does not read a connection while its handler runs, so it never
// notices a client that gave up: the work would go on for nobody until its
// deadline, holding the model request, the tool call and a file open. Work
// for a client therefore runs under watchConn, which looks at the
// connection every connPoll without taking bytes from it.

// connPoll is how often watchConn looks at a client's connection.
const connPoll = 200 * time.Millisecond

// errClientGone is the cause of a context cancelled by watchConn.
var errClientGone = errors.New("the client closed the connection")

// watchConn returns a context derived from parent that is cancelled when
// the client at the other end of conn closes it or resets it, and a stop
// function that ends the watch and cancels the context; call it when the
// response is done. A conn that is not a socket (tests' in-memory
// connections) is not watched.
func watchConn(parent context.Context, conn net.Conn) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := func() { cancel(context.Canceled) }
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return ctx, stop
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return ctx, stop
	}
	go func() {
		t := time.NewTicker(connPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if peerGone(raw) {
					cancel(errClientGone)
					return
				}
			}
		}
	}()
	return ctx, stop
}

// lingerListener answers the body limit's 413 so that clients can read it.
// When fasthttp refuses a body that is too large it answers and closes the
// connection at once, with the body still arriving; a socket closed with
// unread data sends a reset, and the client, still writing, loses the
// answer with its connection. Each accepted TCP connection therefore closes
// the way net/http's does: send the response's end (FIN), read and drop
// what the client still sends, for a bounded time and size, then close.
type lingerListener struct{ net.Listener }

// Bounds of a lingering close.
const (
	lingerTime  = 3 * time.Second
	lingerBytes = 64 << 20
)

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		return &lingerConn{TCPConn: tc}, nil
	}
	return c, err
}

// lingerConn is a TCP connection whose Close lingers (see lingerListener).
type lingerConn struct {
	*net.TCPConn
	once sync.Once
}

func (c *lingerConn) Close() error {
	var err error
	c.once.Do(func() {
		if c.TCPConn.CloseWrite() != nil {
			err = c.TCPConn.Close()
			return
		}
		go func() {
			c.TCPConn.SetReadDeadline(time.Now().Add(lingerTime))
			io.CopyN(io.Discard, c.TCPConn, lingerBytes)
			c.TCPConn.Close()
		}()
	})
	return err
}

// Serve answers requests on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.app.Listener(lingerListener{ln}) }

// cancelOnLeave gives the handler a context (c.UserContext) that ends when
// the client goes away, for work that answers in one piece. A stream
// (streamEvents) keeps that context's values, not its end, and watches the
// connection itself while it runs.
func (s *Server) cancelOnLeave() fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, stop := watchConn(c.UserContext(), c.Context().Conn())
		defer stop()
		c.SetUserContext(ctx)
		return c.Next()
	}
}
