package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
)

// maxLogged caps what one interpreter or worker process may write to the
// server's log; the rest is dropped, with one notice.
const maxLogged = 64 << 10

// lineLog forwards what tools print to the server's log, a line at a time,
// up to maxLogged bytes.
type lineLog struct {
	log   *slog.Logger
	msg   string
	attrs []any

	mu      sync.Mutex
	budget  int
	partial []byte
}

func newLineLog(log *slog.Logger, msg string, attrs ...any) *lineLog {
	return &lineLog{log: log, msg: msg, attrs: slices.Clip(attrs), budget: maxLogged}
}

// Write logs every complete line of p and keeps the rest for the next Write.
func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(l.partial) < 4096 {
				l.partial = append(l.partial, p[:min(len(p), 4096-len(l.partial))]...)
			}
			break
		}
		line := p[:i]
		if len(l.partial) > 0 {
			line = append(l.partial, line...)
			l.partial = l.partial[:0]
		}
		l.line(line)
		p = p[i+1:]
	}
	return n, nil
}

// line logs one line, or nothing once the budget is spent. It is called with
// l.mu held.
func (l *lineLog) line(b []byte) {
	if l.budget <= 0 {
		return
	}
	l.budget -= len(b) + 1
	if l.budget <= 0 {
		l.log.Warn(l.msg+": output over the log cap, dropping the rest", l.attrs...)
		return
	}
	l.log.Info(l.msg, append(l.attrs, "line", string(b))...)
}

// drain reads r to its end, passing each line (cut at 4 KiB) to onLine.
func drain(r io.Reader, onLine func(line []byte)) {
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			onLine(line)
			// Skip the rest of an over-long line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			continue
		}
		if len(line) > 0 {
			onLine(bytes.TrimSuffix(line, []byte("\n")))
		}
		if err != nil {
			return
		}
	}
}
