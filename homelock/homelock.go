// Package homelock keeps one AdaptBot server per folder. The server takes an
// exclusive lock on a file in its folder for as long as it runs, and writes
// its process ID and address into that file, so a second server started in
// the same folder refuses to start and says which one holds it.
//
// The lock is the kernel's (flock), not the file's existence: the kernel
// drops it when the process ends, however it ends (kill -9 included), so a
// crash never leaves a folder locked. The file itself stays behind, holding
// the last holder's details; they are read only while someone holds the
// lock. Readers (tools list, show, report) take no lock: they write
// nothing. Besides the server, `adaptbot mcp` with no server running and
// the users commands with none take it (AcquireAs), as the folder's one
// writer for as long as they run.
//
// It must not be used to wait for a folder: Acquire never blocks.
package homelock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// FileName is the lock file's name in the folder it guards.
const FileName = ".adaptbot.lock"

// Lock is a held lock on a folder. Release it when the server stops; the
// kernel releases it anyway when the process ends.
type Lock struct {
	mu     sync.Mutex
	f      *os.File
	holder Holder
}

// Holder is what the lock file says about the process that holds it.
type Holder struct {
	PID int `json:"pid"`
	// Addr is the address the server listens on; empty until known (a
	// server asked for port 0 learns its port only once it listens).
	Addr string `json:"addr,omitempty"`
	// Command is the command that holds the folder when it is not the
	// server: "mcp", for `adaptbot mcp` serving the folder's tools itself.
	Command string `json:"command,omitempty"`
}

// HeldError is Acquire's answer when another process holds the folder.
type HeldError struct {
	Dir    string
	Holder Holder // zero when the holder has not written its details yet
}

func (e *HeldError) Error() string {
	var who string
	switch {
	case e.Holder.Command == "mcp":
		return fmt.Sprintf("adaptbot mcp (pid %d) holds %s: it serves the folder's tools over stdio as the folder's one writer; stop the MCP client that started it, or start the server first (adaptbot mcp then forwards to it), or use another folder (ADAPTBOT_HOME)", e.Holder.PID, e.Dir)
	case e.Holder.Command != "":
		return fmt.Sprintf("adaptbot %s (pid %d) holds %s as the folder's one writer; try again once it has finished", e.Holder.Command, e.Holder.PID, e.Dir)
	case e.Holder.PID == 0:
		who = "another AdaptBot server is starting in " + e.Dir
	case e.Holder.Addr == "":
		who = fmt.Sprintf("another AdaptBot server (pid %d) is running in %s", e.Holder.PID, e.Dir)
	default:
		who = fmt.Sprintf("another AdaptBot server (pid %d) is running in %s at http://%s", e.Holder.PID, e.Dir, e.Holder.Addr)
	}
	return who + ": one server per folder writes its tools, registry and benchmarks; use that one, stop it first, or start this one in another folder (ADAPTBOT_HOME)"
}

// Acquire locks dir for this process, recording addr (which may be empty or
// have port 0, to be set later with SetAddr). It fails at once with a
// *HeldError when another process holds dir.
func Acquire(dir, addr string) (*Lock, error) { return AcquireAs(dir, addr, "") }

// AcquireAs is Acquire for a command other than the server (Holder.Command),
// which listens on no address: others are told which command holds the
// folder.
func AcquireAs(dir, addr, command string) (*Lock, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(abs, FileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	held, err := TryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	if held {
		h := read(f)
		f.Close()
		return nil, &HeldError{Dir: abs, Holder: h}
	}
	l := &Lock{f: f, holder: Holder{PID: os.Getpid(), Addr: knownAddr(addr), Command: command}}
	if err := l.write(); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// knownAddr is addr unless its port is still to be chosen.
func knownAddr(addr string) string {
	if strings.HasSuffix(addr, ":0") {
		return ""
	}
	return addr
}

// SetAddr records the address the server listens on, once it knows it. A
// nil Lock does nothing.
func (l *Lock) SetAddr(addr string) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("homelock: released")
	}
	l.holder.Addr = addr
	return l.write()
}

// write replaces the file's content with the holder's details; l.mu is held
// or l is not shared yet.
func (l *Lock) write() error {
	b, err := json.Marshal(l.holder)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	return nil
}

// Release unlocks the folder. The file stays (removing it would let two
// processes lock two different files of the same name); its content is
// cleared. A nil Lock, or one released already, does nothing.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	err := l.f.Close() // closing the last descriptor drops the lock
	l.f = nil
	return err
}

// Read reports who holds dir: the holder and true, or false when no process
// holds it (a file left by a process that ended says nothing).
func Read(dir string) (Holder, bool, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, err
	}
	defer f.Close() // also drops the lock TryLock may take
	held, err := TryLock(f)
	if err != nil || !held {
		return Holder{}, false, err
	}
	return read(f), true, nil
}

// read parses the holder's details from f; a file being written, or empty,
// gives a zero Holder.
func read(f *os.File) Holder {
	var b [512]byte
	n, _ := f.ReadAt(b[:], 0)
	var h Holder
	json.Unmarshal(bytes.TrimSpace(b[:n]), &h)
	return h
}
