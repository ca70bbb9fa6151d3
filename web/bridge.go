package web

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// This file is the bridge from Fiber (fasthttp) to net/http handlers, such
// as the MCP SDK's streamable HTTP handler behind /mcp, without buffering
// streamed responses.

// sseKeepAlive is how often an idle event stream gets a comment line, which
// clients ignore; it tells a closed connection from a quiet one.
const sseKeepAlive = 20 * time.Second

// streamHandler runs a net/http handler inside Fiber without buffering
// streamed responses, which Fiber's adaptor does and which would hold
// server-sent events until the handler returns. A response the handler
// finishes without flushing is sent as one body; once it flushes, the status
// and headers go out and every later write is streamed, flushed when the
// handler flushes. The handler's request context is the request's own
// (who calls, the door, the caller's trace: every value the edge put in
// it), but it ends when the client goes away (watchConn) or when base
// ends: its lifetime is the stream's, not the handler's.
func streamHandler(base context.Context, h http.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		fctx := c.Context()
		ctx, endWithBase := context.WithCancel(context.WithoutCancel(c.UserContext()))
		stopBase := context.AfterFunc(base, endWithBase)
		ctx, stopWatch := watchConn(ctx, fctx.Conn()) // ends when the client leaves
		cancel := func() {
			stopWatch()
			stopBase()
			endWithBase()
		}
		ctx = context.WithValue(ctx, http.LocalAddrContextKey, fctx.LocalAddr())
		req, err := http.NewRequestWithContext(ctx, c.Method(), string(fctx.RequestURI()), bytes.NewReader(append([]byte(nil), c.Body()...)))
		if err != nil {
			cancel()
			return badRequest(err.Error())
		}
		req.Host = string(fctx.Host())
		req.RemoteAddr = fctx.RemoteAddr().String()
		req.RequestURI = string(fctx.RequestURI())
		req.ContentLength = int64(len(c.Body()))
		fctx.Request.Header.VisitAll(func(k, v []byte) { req.Header.Add(string(k), string(v)) })

		sw := newStreamWriter()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer sw.finish()
			h.ServeHTTP(sw, req)
		}()
		// A handler that flushes and returns at once (an MCP ping) makes
		// both ready; once it has flushed, its bytes are in chunks, not in
		// the buffer, so it must take the streamed path whichever is seen
		// first.
		select {
		case <-done:
			if status, header, body, ok := sw.buffered(); ok {
				cancel()
				copyHeader(c, header)
				c.Status(status)
				return c.Send(body)
			}
		case <-sw.streaming:
		}
		status, header := sw.streamed()
		copyHeader(c, header)
		c.Status(status)
		sse := strings.HasPrefix(header.Get("Content-Type"), "text/event-stream")
		fctx.SetBodyStreamWriter(func(bw *bufio.Writer) {
			defer cancel()
			sw.pump(bw, sse)
		})
		return nil
	}
}

func copyHeader(c *fiber.Ctx, h http.Header) {
	for k, vs := range h {
		for i, v := range vs {
			if i == 0 {
				c.Set(k, v)
			} else {
				c.Append(k, v)
			}
		}
	}
}

// streamWriter is the http.ResponseWriter of streamHandler. Until the first
// flush it buffers; after it, writes go through chunks to pump, which runs
// on the connection's goroutine.
type streamWriter struct {
	header    http.Header
	streaming chan struct{} // closed at the first flush
	chunks    chan []byte   // nil chunk: flush now
	gone      chan struct{} // closed when the client is gone

	mu       sync.Mutex
	status   int
	buf      bytes.Buffer
	sent     http.Header // the header as it was at the first flush
	started  bool        // streaming
	finished bool
	goneOnce sync.Once
}

func newStreamWriter() *streamWriter {
	return &streamWriter{
		header:    http.Header{},
		streaming: make(chan struct{}),
		chunks:    make(chan []byte, 64),
		gone:      make(chan struct{}),
	}
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
	}
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.started {
		defer w.mu.Unlock()
		return w.buf.Write(p)
	}
	w.mu.Unlock()
	return len(p), w.send(append([]byte(nil), p...))
}

// Flush starts streaming, or pushes what was written so far.
func (w *streamWriter) Flush() { w.FlushError() }

// FlushError is what http.ResponseController calls.
func (w *streamWriter) FlushError() error {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.started {
		w.started = true
		w.sent = w.header.Clone()
		pending := append([]byte(nil), w.buf.Bytes()...)
		w.buf.Reset()
		w.mu.Unlock()
		close(w.streaming)
		if len(pending) > 0 {
			if err := w.send(pending); err != nil {
				return err
			}
		}
		return w.send(nil)
	}
	w.mu.Unlock()
	return w.send(nil)
}

func (w *streamWriter) send(chunk []byte) error {
	select {
	case w.chunks <- chunk:
		return nil
	case <-w.gone:
		return errors.New("the client went away")
	}
}

// buffered returns the whole response of a handler that has returned
// without flushing; ok is false if it flushed (its response is streamed).
func (w *streamWriter) buffered() (status int, header http.Header, body []byte, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return 0, nil, nil, false
	}
	status = w.status
	if status == 0 {
		status = http.StatusOK
	}
	return status, w.header, w.buf.Bytes(), true
}

// streamed returns the status and header of a response that has started
// streaming, as they were at the first flush.
func (w *streamWriter) streamed() (int, http.Header) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.sent
}

// finish ends the stream once the handler has returned.
func (w *streamWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.finished {
		w.finished = true
		close(w.chunks)
	}
}

// pump writes chunks to the connection until the handler finishes or the
// client goes away; an idle event stream gets a comment line now and then.
func (w *streamWriter) pump(bw *bufio.Writer, sse bool) {
	defer w.goneOnce.Do(func() { close(w.gone) })
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	midEvent := false // data written since the last flush: no comment in between
	for {
		select {
		case chunk, ok := <-w.chunks:
			if !ok {
				bw.Flush()
				return
			}
			if chunk != nil {
				if _, err := bw.Write(chunk); err != nil {
					return
				}
				midEvent = true
				continue
			}
			if err := bw.Flush(); err != nil {
				return
			}
			midEvent = false
		case <-tick.C:
			if !sse || midEvent {
				continue
			}
			if _, err := bw.WriteString(": keep-alive\n\n"); err != nil {
				return
			}
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
