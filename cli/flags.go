package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Every command parses its flags here, the one way: flags may come before
// or after the arguments, and a flag a command does not know, or a bad
// value, is a usage error (exit status 2) of one line followed by the
// command's usage, never Go's list of flags.

// NewFlags is a command's empty flag set; name is the command as typed
// ("tools list"), for messages.
func NewFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// Parse parses args into fs. usage is the command's, shown after a usage
// error; tests see every flag set through e.Flags.
func (e Env) Parse(fs *flag.FlagSet, args []string, usage string) error {
	if e.Flags != nil {
		e.Flags(fs, usage)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return UsageError(usage, "%s: %s", fs.Name(), flagProblem(fs, err))
	}
	return nil
}

// flagProblem says what the flag package found wrong in a user's terms,
// with flags written as the usage writes them (--name).
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + dashes(name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return dashes(name) + " needs a value"
	}
	// invalid value "x" for flag -limit: parse error; a flag of our own
	// (--rename) says why after the colon.
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if value, name, ok := strings.Cut(rest, " for flag "); ok {
			name, why, _ := strings.Cut(name, ": ")
			switch {
			case strings.HasPrefix(why, "parse error"), why == "":
				why = wantOf(fs.Lookup(strings.TrimLeft(name, "-")))
			case why == "value out of range":
				why = ": it is out of range"
			default:
				why = ": " + why
			}
			return fmt.Sprintf("%s: %s is not a valid value%s", dashes(name), value, why)
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if value, name, ok := strings.Cut(rest, " for "); ok {
			name, _, _ = strings.Cut(name, ":")
			return fmt.Sprintf("%s: %s is not true or false", dashes(name), value)
		}
	}
	return msg
}

// wantOf says what a flag's value must be, for a value its type refused.
func wantOf(f *flag.Flag) string {
	if f == nil {
		return ""
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return " (want a duration such as 30s, 2m or 1h30m)"
	case int, int64, uint, uint64:
		return " (want a whole number)"
	case float64:
		return " (want a number)"
	}
	return ""
}

// dashes writes a flag as the usage does: -c, --name.
func dashes(name string) string {
	name = strings.TrimLeft(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// parseInterspersed parses flags that may come after arguments, as in
// `adaptbot search weather --limit 3`; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
	return fs.Parse(append([]string{"--"}, rest...))
}

// choice is a flag whose value must be one of a few words, such as
// --format.
type choice struct {
	name, value string
	fs          *flag.FlagSet
	allowed     []string
}

// formatFlag defines --format on fs with its default and allowed values.
func formatFlag(fs *flag.FlagSet, def string, allowed ...string) *choice {
	c := &choice{name: "format", fs: fs, allowed: allowed}
	fs.StringVar(&c.value, "format", def, strings.Join(allowed, ", "))
	return c
}

// check is a usage error unless the value is allowed.
func (c *choice) check(usage string) error {
	if slices.Contains(c.allowed, c.value) {
		return nil
	}
	words := strings.Join(c.allowed[:len(c.allowed)-1], ", ") + " or " + c.allowed[len(c.allowed)-1]
	return UsageError(usage, "%s: --%s must be %s, not %q", c.fs.Name(), c.name, words, c.value)
}

// ExitError ends the program with its Code. Err, if set, is printed, and
// then Usage, if set; a nil Err means the command has already said what
// went wrong.
type ExitError struct {
	Code  int
	Err   error
	Usage string
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError is a command line that cannot run: exit status 2, one line
// that says what is wrong, then the command's usage.
func UsageError(usage, format string, args ...any) error {
	return &ExitError{Code: 2, Err: fmt.Errorf(format, args...), Usage: usage}
}

// ExitCode is the one place that turns a command's error into an exit
// status, printing the error unless the command already has.
func ExitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 1
	ee, ok := errors.AsType[*ExitError](err)
	if ok {
		code = ee.Code
		if ee.Err == nil {
			return code
		}
	}
	fmt.Fprintln(stderr, "adaptbot:", err)
	if ok && ee.Usage != "" {
		fmt.Fprint(stderr, "\n"+ee.Usage)
	}
	return code
}
