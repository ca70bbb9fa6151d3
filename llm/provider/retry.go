package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"adaptbot/llm"
)

// Retry policy. Waits grow from firstWait, doubling each try, with jitter;
// a Retry-After from the provider is honoured but never past maxWait, and no
// wait runs past the caller's deadline.
const (
	defaultTimeout = llm.DefaultTimeout
	firstWait      = 500 * time.Millisecond
	maxWait        = 30 * time.Second
)

// attempt is what the HTTP layer saw of one try. SDKs flatten their errors
// into strings (langchaingo's openai client even replaces a timeout with its
// own wording), so the facts that decide a retry are recorded here, below
// the SDK, by the observer transport.
type attempt struct {
	mu         sync.Mutex
	status     int           // the response status, 0 before headers
	retryAfter time.Duration // the response's Retry-After, 0 if none
	connErr    error         // a transport or body read error
	keep       bool          // keep the reply's bytes (see repair)
	body       bytes.Buffer  // the reply's bytes, when keep
}

func (a *attempt) facts() (int, time.Duration, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status, a.retryAfter, a.connErr
}

type attemptKey struct{}

// observer is the http.RoundTripper under every HTTP provider's client. It
// records each try's status, Retry-After and connection errors into the
// attempt the adapter put in the request's context. It never retries
// itself: the adapter does, so a retry resends the whole call and never
// follows output that was already delivered.
type observer struct{ base http.RoundTripper }

// httpClient is the client handed to the SDKs.
func httpClient() *http.Client {
	return &http.Client{Transport: observer{base: http.DefaultTransport}}
}

func (o observer) RoundTrip(req *http.Request) (*http.Response, error) {
	a, _ := req.Context().Value(attemptKey{}).(*attempt)
	resp, err := o.base.RoundTrip(req)
	if a == nil {
		return resp, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.connErr = err
		return nil, err
	}
	a.status = resp.StatusCode
	a.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	resp.Body = &watchedBody{ReadCloser: resp.Body, a: a}
	if a.keep && resp.StatusCode == http.StatusOK {
		resp.Body = &keptBody{ReadCloser: resp.Body, a: a}
	}
	return resp, nil
}

// watchedBody records a connection that breaks while the body is read.
type watchedBody struct {
	io.ReadCloser
	a *attempt
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.a.mu.Lock()
		if b.a.connErr == nil {
			b.a.connErr = err
		}
		b.a.mu.Unlock()
	}
	return n, err
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// failure is one failed try, sorted.
type failure struct {
	kind       llm.ErrorKind
	retryable  bool
	retryAfter time.Duration // what the provider asked for, 0 if nothing
	err        error
}

// classify sorts a failed try by what the HTTP layer saw (a). timedOut says
// the per-call timeout ended the try.
func classify(err error, a *attempt, timedOut bool) failure {
	code, retryAfter, connErr := a.facts()
	f := failure{kind: llm.Failed, err: err}
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		f.kind, f.retryable, f.retryAfter = llm.Overloaded, true, retryAfter
	case code >= 500:
		f.retryable, f.retryAfter = true, retryAfter
	case code != 0 && code != http.StatusOK:
		// A 4xx will not change by asking again.
	case timedOut:
		f.kind, f.retryable = llm.Timeout, true
	case connErr != nil:
		f.retryable = true
	}
	return f
}

// backoff is the wait before try number try+1 (try counts from 0): the
// doubling wait with jitter, or the provider's Retry-After when longer,
// capped at maxWait.
func backoff(try int, retryAfter time.Duration) time.Duration {
	d := firstWait << min(try, 10)
	d = d/2 + rand.N(d/2+1) // jitter, so clients that failed together spread out
	d = max(d, retryAfter)
	return min(d, maxWait)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errDeadline stands in for the SDK's error when the per-call timeout cut
// a streamed reply short and the SDK returned the partial reply as if whole.
var errDeadline = errors.New("the reply was cut short by the per-call timeout")
