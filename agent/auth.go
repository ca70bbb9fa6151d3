package agent

import "errors"

// ErrForbidden is what a Builder's error is (errors.Is) when the message's
// caller may not make the build it asks for. Nothing is built or deleted;
// the Result's Response says why, in the Builder's words.
var ErrForbidden = errors.New("you may not change tools")
