package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Every command parses its flags here, the one way: flags may come before
// or after the arguments, and a flag a command does not know, or a bad
// value, is a usage error (exit status 2) of one line followed by the
// command's usage, never Go's list of flags.

// newFlags is a command's empty flag set; name is the command as typed
// ("tools list"), for messages.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. usage is the command's, shown after a
// usage error; tests see every flag set through cfg.hooks.flags.
func parseFlags(cfg Config, fs *flag.FlagSet, args []string, usage string) error {
	if cfg.hooks.flags != nil {
		cfg.hooks.flags(fs, usage)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return usageError(usage, "%s: %s", fs.Name(), flagProblem(err))
	}
	return nil
}

// flagProblem says what the flag package found wrong in a user's terms,
// with flags written as the usage writes them (--name).
func flagProblem(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + dashes(name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return dashes(name) + " needs a value"
	}
	// invalid value "x" for flag -limit: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if value, name, ok := strings.Cut(rest, " for flag "); ok {
			name, _, _ = strings.Cut(name, ":")
			return fmt.Sprintf("%s: %s is not a valid value", dashes(name), value)
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
	return usageError(usage, "%s: --%s must be %s, not %q", c.fs.Name(), c.name, words, c.value)
}
