package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"adaptbot/toolkit"
)

// The server and a worker talk over two pipes that the worker sees as file
// descriptors 3 (requests) and 4 (responses); its standard input is
// /dev/null and its standard output and error only reach the server's log,
// so nothing a tool prints or reads can forge or swallow a frame. A frame is
// a 4-byte big-endian length and a JSON document.
const (
	requestFD  = 3
	responseFD = 4
)

// The operations of a request.
const (
	opCall    = "call"    // run a tool
	opCompile = "compile" // load a tool without calling it
	opCancel  = "cancel"  // the caller gave up on call ID
	opReturn  = "return"  // the answer to a tool's call of another tool, or to its HTTP request (response.Call)
	opHold    = "hold"    // a request of call ID waits for a person: stop its clock
	opResume  = "resume"  // the person answered: start its clock again
)

// Exit codes by which a worker says why it ended, for when its last frame
// is lost. A Go fatal error (stack overflow, concurrent map write, out of
// memory) exits with 2 and says why on standard error.
const (
	exitTimeout  = 71 // a call ran past its limit
	exitLimit    = 72 // the memory or goroutine limit was hit
	exitRecycle  = 73 // a tool left goroutines running; the worker retires
	exitProtocol = 74 // the server's frames made no sense
)

// workerConfig is the first frame the server sends a worker.
type workerConfig struct {
	MemoryLimit   int64 `json:"memory_limit"`
	MaxGoroutines int   `json:"max_goroutines"`
	MaxOutput     int   `json:"max_output"`
	CacheSize     int   `json:"cache_size"`
}

// withDefaults fills what a server left at zero, as Options would.
func (c workerConfig) withDefaults() workerConfig {
	o := Options{MemoryLimit: c.MemoryLimit, MaxGoroutines: c.MaxGoroutines, MaxOutput: c.MaxOutput, CacheSize: c.CacheSize}.withDefaults()
	c.MemoryLimit, c.MaxGoroutines, c.MaxOutput, c.CacheSize = o.MemoryLimit, o.MaxGoroutines, o.MaxOutput, o.CacheSize
	return c
}

// workerHello is the first frame a worker sends back, once it is confined
// and its limits are set; or, in place of that, why it cannot serve.
type workerHello struct {
	PID int `json:"pid"`
	workerConfinement
	// Error says why the worker will not serve (it must be confined and
	// cannot be); it exits after this frame.
	Error string `json:"error,omitempty"`
}

// workerConfinement is what a worker says, in its hello, of the kernel's
// confinement it runs under: Landlock for its files, a seccomp filter for
// its system calls. A worker binary that knows nothing of either says
// nothing, which reads as neither.
type workerConfinement struct {
	// Landlock is the Landlock ABI version the worker is confined with, 0
	// if it is not; Unconfined then says why.
	Landlock   int    `json:"landlock,omitempty"`
	Unconfined string `json:"unconfined,omitempty"`
	// Seccomp says the worker's seccomp filter is on every one of its
	// threads; NoSeccomp says why not, when it tried (only a worker
	// confined by Landlock does).
	Seccomp   bool   `json:"seccomp,omitempty"`
	NoSeccomp string `json:"no_seccomp,omitempty"`
}

type request struct {
	ID      uint64          `json:"id"`
	Op      string          `json:"op"`
	Tool    string          `json:"tool,omitempty"`
	Hash    string          `json:"hash"`             // hex of sourceHash
	Source  []byte          `json:"source,omitempty"` // absent when the worker has the hash cached
	Input   json.RawMessage `json:"input,omitempty"`
	Timeout time.Duration   `json:"timeout,omitempty"`
	// Return answers the nested call Return.Seq of call ID (opReturn).
	Return *nestedReturn `json:"return,omitempty"`
}

// nestedCall is a tool's call of another tool (toolkit.Call) or, with HTTP
// set, an HTTP request it asks the host to send (toolkit.Do), which a
// worker sends in the middle of call ID as a response frame with Call set;
// the server answers with an opReturn request. A worker has at most one
// nested call outstanding per call. A request's secrets cross as their
// placeholders: no secret's value is ever in a frame.
type nestedCall struct {
	Seq  uint64           `json:"seq"`
	Tool string           `json:"tool,omitempty"`
	Args json.RawMessage  `json:"args,omitempty"`
	HTTP *toolkit.Request `json:"http,omitempty"`
}

// nestedReturn is the server's answer to a nestedCall: an output (for an
// HTTP request, Response, with every secret's value masked), or an error
// message; Blocked says the egress policy refused the request
// (toolkit.ErrBlocked).
type nestedReturn struct {
	Seq      uint64            `json:"seq"`
	Output   string            `json:"output,omitempty"`
	Response *toolkit.Response `json:"response,omitempty"`
	Error    string            `json:"error,omitempty"`
	Failed   bool              `json:"failed,omitempty"`
	Blocked  bool              `json:"blocked,omitempty"`
}

type response struct {
	ID uint64 `json:"id"`
	// Call, when set, is not the call's answer but a nested call it makes.
	Call *nestedCall `json:"call,omitempty"`
	outcome
	// NeedSource asks for the request again with the source: the worker no
	// longer has that version cached.
	NeedSource bool `json:"need_source,omitempty"`
	// Exit says the worker ends after this frame, and why.
	Exit string `json:"exit,omitempty"`
}

// maxFrame bounds a frame: an output at the cap, escaped as JSON (at worst
// six bytes a byte), plus room for the rest.
func maxFrame(maxOutput int) int { return 6*maxOutput + 1<<20 }

// frameTap, when set (by a test, in the server's process), sees every
// frame the server writes to a worker and reads from one.
var frameTap func(frame []byte)

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if frameTap != nil {
		frameTap(b)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

func readFrame(r io.Reader, v any, max int) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > max {
		return fmt.Errorf("frame of %d bytes is over the %d-byte limit", n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return err
	}
	if frameTap != nil {
		frameTap(buf)
	}
	return json.Unmarshal(buf, v)
}
