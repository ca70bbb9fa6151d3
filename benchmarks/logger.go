package benchmarks

import (
	"adaptbot/redact"

	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultPath is where the server logs rows unless configured otherwise.
const DefaultPath = "benchmarks/benchmarks.csv"

// Logger appends rows to one CSV file. It is safe for concurrent use: each
// row is encoded first and then written with a single write under a mutex, so
// rows are never torn or interleaved. Use one Logger per file per process.
type Logger struct {
	path     string
	rotated  string
	upgraded bool

	mu        sync.Mutex
	f         *os.File // nil once closed
	sink      Sink
	committer Committer
}

// Sink receives each row a Logger writes, as the file holds it, in file
// order. A *Store is a Sink: it keeps the aggregates up to date.
type Sink interface {
	Add(Row)
}

// SetSink makes the Logger hand every row it writes from now on to sink,
// under its lock, so the sink sees rows in file order. Add must be quick.
func (l *Logger) SetSink(sink Sink) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sink = sink
}

// Committer makes each row a Logger writes durable somewhere beyond the
// file (a cluster's stream); Log returns only once Commit has, so that a
// request answered after its row is logged never loses that row to a crash.
// *cluster.Rows is one.
type Committer interface {
	Commit(Row) error
}

// SetCommitter makes Log hand every row it writes from now on to c, after
// the file and outside the Logger's lock, and wait for it: rows logged at
// once are committed at once.
func (l *Logger) SetCommitter(c Committer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.committer = c
}

// Open prepares path for appending rows and returns a Logger for it, creating
// the file and its parent directories as needed.
//
//   - A new or empty file gets the header line.
//   - A file whose header is an older one of ours (the current columns'
//     first N, as a release that had fewer columns wrote it) is upgraded:
//     Open renames it aside, untouched, to PATH.YYYYMMDDTHHMMSSZ.bak, and
//     writes its rows, each with the new columns empty, to a new file under
//     the current header. Nothing an analyst had is lost, and the
//     aggregates still see the older rows. Upgraded reports the backup.
//   - Any other first line (a file of someone else's, the nine-column
//     format of the seed) is never appended to, so columns are never mixed.
//     Open renames it aside, untouched, the same way, starts a new file,
//     and reports the backup's path through Rotated; the caller should log
//     it. ReadFile still reads the backup.
//   - A file whose last line lacks its newline (a write torn by a crash) is
//     ended first, closing a quoted field left open, so the next row starts
//     on a line of its own. ReadFile reports the torn line as a bad line.
func Open(path string) (*Logger, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	rotated, repair, older, err := inspect(path)
	if err != nil {
		return nil, err
	}
	if older {
		if err := upgrade(rotated, path); err != nil {
			return nil, err
		}
	}
	// The rows hold people's words: the owner alone reads them, and a file
	// an older release left readable to all is tightened.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	var prefix []byte
	if info.Size() == 0 {
		prefix = encode(header)
	} else {
		prefix = repair
	}
	if len(prefix) > 0 {
		if _, err := f.Write(prefix); err != nil {
			f.Close()
			return nil, fmt.Errorf("benchmarks: write %s: %w", path, err)
		}
	}
	return &Logger{path: path, rotated: rotated, upgraded: older, f: f}, nil
}

// maxHeaderLen bounds how much of an unknown file Open reads looking for the
// end of its first line.
const maxHeaderLen = 64 << 10

// inspect looks at an existing file at path. If its header is not the current
// one it moves the file aside and returns the new name, and whether the header
// was an older one of ours (then the rows are worth carrying over). Otherwise
// it returns the bytes needed to end a torn last line, if any.
func inspect(path string) (rotated string, repair []byte, older bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("benchmarks: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", nil, false, fmt.Errorf("benchmarks: %w", err)
	}
	if info.Size() == 0 {
		return "", nil, false, nil
	}

	first, err := bufio.NewReader(io.LimitReader(f, maxHeaderLen)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", nil, false, fmt.Errorf("benchmarks: read %s: %w", path, err)
	}
	if !isHeader(first) {
		f.Close() // before renaming, for systems that refuse to rename open files
		older := isOlderHeader(first)
		rotated, err := rotate(path)
		return rotated, nil, older, err
	}

	last := make([]byte, 1)
	if _, err := f.ReadAt(last, info.Size()-1); err != nil {
		return "", nil, false, fmt.Errorf("benchmarks: read %s: %w", path, err)
	}
	if last[0] == '\n' {
		return "", nil, false, nil
	}
	// Quotes come in pairs in every complete record, so an odd count means
	// the torn record stopped inside a quoted field: close it, or the next
	// rows would be read as part of that field.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", nil, false, fmt.Errorf("benchmarks: read %s: %w", path, err)
	}
	quotes, err := countByte(f, '"')
	if err != nil {
		return "", nil, false, fmt.Errorf("benchmarks: read %s: %w", path, err)
	}
	if quotes%2 == 1 {
		return "", []byte("\"\n"), false, nil
	}
	return "", []byte("\n"), false, nil
}

// isOlderHeader reports whether line is the header of an older release of
// ours: the current columns' first N, N from the 18 of the first release
// with a tools column on (the nine-column seed format is not ours to
// upgrade: it is rotated aside, as it always was).
func isOlderHeader(line string) bool {
	line = strings.TrimPrefix(line, "\ufeff")
	if !strings.HasSuffix(line, "\n") {
		return false
	}
	fields, err := csv.NewReader(strings.NewReader(line)).Read()
	return err == nil && len(fields) >= slices.Index(header, colTools)+1 && len(fields) < len(header) &&
		slices.Equal(fields, header[:len(fields)])
}

// upgrade writes the rows of from, a file with an older header of ours, to
// path under the current header, each with the columns it lacks left empty.
// from stays as it was, the backup: a line that cannot be read as CSV stays
// there only. The new file is written beside path and renamed into place,
// so a crash leaves either nothing or the whole copy.
func upgrade(from, path string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("benchmarks: upgrade: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".upgrade-*")
	if err != nil {
		return fmt.Errorf("benchmarks: upgrade: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	bw := bufio.NewWriterSize(tmp, 256<<10)
	w := csv.NewWriter(bw)
	w.Write(header)
	r := csv.NewReader(src)
	r.FieldsPerRecord = -1
	if _, err := r.Read(); err != nil { // the older header
		tmp.Close()
		return fmt.Errorf("benchmarks: upgrade %s: %w", from, err)
	}
	rec := make([]string, len(header))
	for {
		old, err := r.Read()
		if err == io.EOF {
			break
		}
		if _, bad := errors.AsType[*csv.ParseError](err); bad {
			continue
		}
		if err != nil {
			tmp.Close()
			return fmt.Errorf("benchmarks: upgrade %s: %w", from, err)
		}
		clear(rec)
		copy(rec, old)
		w.Write(rec)
	}
	w.Flush()
	err = errors.Join(w.Error(), bw.Flush(), tmp.Sync(), tmp.Close())
	if err != nil {
		return fmt.Errorf("benchmarks: upgrade %s: %w", from, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("benchmarks: upgrade %s: %w", from, err)
	}
	return nil
}

// isHeader reports whether line is exactly the current header.
func isHeader(line string) bool {
	line = strings.TrimPrefix(line, "\ufeff")
	if !strings.HasSuffix(line, "\n") {
		return false // a torn header, or a first line longer than any header
	}
	fields, err := csv.NewReader(strings.NewReader(line)).Read()
	return err == nil && slices.Equal(fields, header)
}

// rotate renames the file at path to an unused PATH.<UTC time>.bak name.
func rotate(path string) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i := 1; ; i++ {
		name := path + "." + stamp + ".bak"
		if i > 1 {
			name = fmt.Sprintf("%s.%s-%d.bak", path, stamp, i)
		}
		if _, err := os.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			if err != nil {
				return "", fmt.Errorf("benchmarks: %w", err)
			}
			continue
		}
		if err := os.Rename(path, name); err != nil {
			return "", fmt.Errorf("benchmarks: moving aside a file with an older header: %w", err)
		}
		return name, nil
	}
}

func countByte(r io.Reader, c byte) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for {
		m, err := r.Read(buf)
		n += bytes.Count(buf[:m], []byte{c})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// encode renders one CSV record, newline included.
func encode(fields []string) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(fields) // writes to a bytes.Buffer cannot fail
	w.Flush()
	return buf.Bytes()
}

// Path returns the path of the file the Logger appends to.
func (l *Logger) Path() string { return l.path }

// Rotated returns where Open moved a file with another header, or "" if it
// did not move anything. The caller should log it, so analysts know where
// their older rows went (see Upgraded).
func (l *Logger) Rotated() string { return l.rotated }

// Upgraded reports whether the file Rotated names had an older header of
// ours, whose rows Open carried over to the new file.
func (l *Logger) Upgraded() bool { return l.upgraded }

// Log appends r as one line (or more, if a field holds newlines, which CSV
// quotes). A zero Timestamp is replaced by the current time. Log fails after
// Close.
func (l *Logger) Log(r Row) error {
	if r.Timestamp.IsZero() {
		r.Timestamp = time.Now()
	}
	r = r.cleaned()
	// A person's words and the errors quoting them may hold a pasted key.
	r.Query, r.Error = redact.String(r.Query), redact.String(r.Error)
	line := encode(r.record())
	l.mu.Lock()
	if l.f == nil {
		l.mu.Unlock()
		return fmt.Errorf("benchmarks: log to %s: %w", l.path, os.ErrClosed)
	}
	if _, err := l.f.Write(line); err != nil {
		l.mu.Unlock()
		return fmt.Errorf("benchmarks: log to %s: %w", l.path, err)
	}
	if l.sink != nil {
		l.sink.Add(r)
	}
	c := l.committer
	l.mu.Unlock()
	if c != nil {
		if err := c.Commit(r); err != nil {
			return fmt.Errorf("benchmarks: row %s: %w", r.RequestID, err)
		}
	}
	return nil
}

// Close closes the file. Rows are written as they are logged, so nothing is
// buffered; closing twice is not an error.
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("benchmarks: close %s: %w", l.path, err)
	}
	return nil
}
