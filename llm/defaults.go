package llm

import "time"

// The bounds of a model call unless configured (ADAPTBOT_MODEL_TIMEOUT,
// ADAPTBOT_MODEL_RETRIES): every provider's adapter takes them, and so do
// the deadlines derived from them.
const (
	// DefaultTimeout bounds one try of a model call.
	DefaultTimeout = 60 * time.Second
	// DefaultRetries is how often a failed try is tried again.
	DefaultRetries = 2
)
