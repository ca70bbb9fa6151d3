package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool call that failed is sent again only when it certainly never reached
// the server: tools write files and send messages, and running one twice
// repeats that. The SDK cannot say (a broken connection reads the same
// whether it broke before or after the request went out), so the hub's own
// transports record it: a stdio server's stdin and the HTTP client mark the
// failures that happened before a byte of the request was written, and the
// HTTP client notes a server that refused the call's session outright.

// callMark is carried by the context of one attempt at a tool call, so that
// the HTTP client can tell that call's own requests from the others of the
// session (its event stream, notifications, other calls).
type callMark struct {
	refused atomic.Bool // the server answered 404 for the session: it ran nothing
}

type callMarkKey struct{}

func withCallMark(ctx context.Context, m *callMark) context.Context {
	return context.WithValue(ctx, callMarkKey{}, m)
}

// notSentError is a failure that happened before any of the request was
// written. mark is the call whose request it was (nil for a stdio server,
// whose writes fail only the call that makes them).
type notSentError struct {
	mark *callMark
	err  error
}

func (e *notSentError) Error() string { return e.err.Error() }

func (e *notSentError) Unwrap() error { return e.err }

// undelivered reports whether the attempt marked m failed with err before
// its request could reach the server, so that sending it again cannot run
// the tool twice:
//   - the SDK refused to send because the connection had already failed or
//     was closing (ErrConnectionClosed: it checks before writing);
//   - the write itself failed before a byte went out (a stdio server's stdin
//     was closed, an HTTP server could not be dialled);
//   - the HTTP server answered this call's request with 404: it no longer
//     knows the session, and such a server runs nothing. The error alone
//     does not prove it: ErrSessionMissing also ends a session whose event
//     stream found the session gone, after the call may have been
//     delivered, and a server that explains its 404 in a JSON-RPC body
//     yields its JSON-RPC error rather than ErrSessionMissing.
func undelivered(err error, m *callMark) bool {
	if errors.Is(err, sdk.ErrConnectionClosed) || m.refused.Load() {
		return true
	}
	ns, ok := errors.AsType[*notSentError](err)
	return ok && (ns.mark == nil || ns.mark == m)
}

// connectionLost reports whether err means the connection failed (the
// server exited, dropped the connection or forgot the session), as opposed
// to the server answering with an error.
func connectionLost(err error) bool {
	switch {
	case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, sdk.ErrSessionMissing),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, os.ErrClosed),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED):
		return true
	}
	if _, ok := errors.AsType[*notSentError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return true // the HTTP request itself failed, as opposed to a status
	}
	_, ok := errors.AsType[net.Error](err)
	return ok
}

// deliveryTransport marks the failures of a call's HTTP requests that
// happened before the request was written, and notes a 404 for its session.
type deliveryTransport struct{ base http.RoundTripper }

func (t deliveryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	m, _ := req.Context().Value(callMarkKey{}).(*callMark)
	if m == nil || req.Method != http.MethodPost {
		return t.base.RoundTrip(req)
	}
	// WroteHeaders comes before any of the body is written, so it errs on
	// the safe side: a request that failed after it may have been delivered.
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}
	resp, err := t.base.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err != nil {
		if !wrote.Load() {
			return nil, &notSentError{mark: m, err: err}
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" {
		m.refused.Store(true)
	}
	return resp, nil
}
