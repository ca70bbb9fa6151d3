package benchmarks

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// LineError describes one line ReadFile could not turn into a Row.
type LineError struct {
	Line int // 1-based line number in the file
	Err  error
}

// Error returns "line N: reason".
func (e LineError) Error() string {
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

// BadLinesError lists the lines ReadFile or Read skipped. It comes with the
// rows that did read, so a caller may warn and carry on, or treat it as fatal.
type BadLinesError struct {
	Path  string // empty for Read
	Lines []LineError
}

// maxListed bounds how many bad lines Error spells out.
const maxListed = 5

// Error summarizes the bad lines, listing the first few.
func (e *BadLinesError) Error() string {
	var b strings.Builder
	b.WriteString("benchmarks: ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	fmt.Fprintf(&b, "%d bad line(s)", len(e.Lines))
	for i, le := range e.Lines {
		if i == maxListed {
			fmt.Fprintf(&b, "; and %d more", len(e.Lines)-maxListed)
			break
		}
		b.WriteString("; " + le.Error())
	}
	return b.String()
}

// ReadFile reads all rows of a benchmarks CSV file, of the current format or
// an older one. Columns are found by their header name, so missing columns
// (an older file) leave fields at their zero values and unknown columns are
// ignored. As with any encoding/csv reader, a \r\n inside a quoted value
// reads back as \n.
//
// Lines that cannot be read are skipped, and the rows that could be read are
// returned together with a *BadLinesError that names each skipped line. Any
// other error (the file cannot be opened, its first line is not a header)
// comes with nil rows. So, to carry on past bad lines:
//
//	rows, err := benchmarks.ReadFile(path)
//	var bad *benchmarks.BadLinesError
//	if errors.As(err, &bad) {
//		log.Print(err) // warn, keep rows
//	} else if err != nil {
//		return err
//	}
func ReadFile(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	defer f.Close()
	rows, err := Read(f)
	if bad, ok := err.(*BadLinesError); ok {
		bad.Path = path
	} else if err != nil {
		return nil, fmt.Errorf("%w (reading %s)", err, path)
	}
	return rows, err
}

// Read is ReadFile for a reader.
func Read(r io.Reader) ([]Row, error) {
	var rows []Row
	err := Scan(r, func(row Row) error {
		rows = append(rows, row)
		return nil
	})
	if err != nil && !isBadLines(err) {
		return nil, err
	}
	return rows, err
}

func isBadLines(err error) bool {
	_, ok := err.(*BadLinesError)
	return ok
}

// ScanFile is Scan over the file at path: it streams the rows, holding one at
// a time, so a file of any size reads in constant memory.
func ScanFile(path string, fn func(Row) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("benchmarks: %w", err)
	}
	defer f.Close()
	err = Scan(f, fn)
	if bad, ok := err.(*BadLinesError); ok {
		bad.Path = path
	} else if err != nil {
		return fmt.Errorf("%w (reading %s)", err, path)
	}
	return err
}

// Scan reads rows as Read does and calls fn with each, in file order. An
// error from fn stops the scan and is returned as it is. Lines that cannot be
// read are skipped and reported at the end in a *BadLinesError, after fn has
// seen every good row.
func Scan(r io.Reader, fn func(Row) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked per line, so one bad line does not stop the rest
	cr.ReuseRecord = true   // the strings are fresh per line; only the slice is reused
	head, err := cr.Read()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return fmt.Errorf("benchmarks: header: %w", err)
	}
	cols := make([]string, len(head))
	known := false
	for i, name := range head {
		name = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(name, "\ufeff")))
		cols[i] = name
		for _, h := range header {
			known = known || name == h
		}
	}
	if !known {
		return fmt.Errorf("benchmarks: first line has none of the expected columns: %q", head)
	}

	var bad []LineError
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if pe, ok := errors.AsType[*csv.ParseError](err); ok {
			bad = append(bad, LineError{Line: pe.StartLine, Err: pe.Err})
			continue
		}
		if err != nil {
			return fmt.Errorf("benchmarks: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(cols) {
			bad = append(bad, LineError{Line: line, Err: fmt.Errorf("%d fields, want %d", len(rec), len(cols))})
			continue
		}
		var row Row
		for i, v := range rec {
			if err = row.setField(cols[i], v); err != nil {
				break
			}
		}
		if err != nil {
			bad = append(bad, LineError{Line: line, Err: err})
			continue
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	if len(bad) > 0 {
		return &BadLinesError{Lines: bad}
	}
	return nil
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
