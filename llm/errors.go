package llm

import (
	"errors"
	"fmt"
	"time"
)

// ErrorKind sorts model failures by what the user can do about them.
type ErrorKind string

// The kinds of model failure.
const (
	// Overloaded: the provider kept answering 429 or 503 after every retry;
	// try again after RetryAfter.
	Overloaded ErrorKind = "overloaded"
	// Timeout: a call took longer than the per-call timeout, every try.
	Timeout ErrorKind = "timeout"
	// Failed: anything else (a 4xx, a broken reply, a refused connection).
	Failed ErrorKind = "failed"
)

// Error is a model call that failed after the provider layer's retries. Its
// message names the provider, the model and, where known, the URL, never
// our internals. The HTTP edge maps Kind to a status: Overloaded → 503 with
// Retry-After, Timeout → 504, Failed → 502.
type Error struct {
	Kind       ErrorKind
	Provider   string
	Model      string
	URL        string
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	where := e.Provider
	if e.Model != "" {
		where += " model " + e.Model
	}
	if e.URL != "" {
		where += " at " + e.URL
	}
	switch e.Kind {
	case Overloaded:
		return fmt.Sprintf("the %s is overloaded or rate-limited; try again later", where)
	case Timeout:
		return fmt.Sprintf("the %s did not answer in time", where)
	}
	if e.Err != nil {
		return fmt.Sprintf("the %s failed: %v", where, e.Err)
	}
	return fmt.Sprintf("the %s failed", where)
}

func (e *Error) Unwrap() error { return e.Err }

// AsError returns err's *Error, if it has one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
