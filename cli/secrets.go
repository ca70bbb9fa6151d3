package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"adaptbot"
)

// `adaptbot secrets`: the secrets API's client (docs/acting.md). A value
// is read from standard input, never from an argument (which the shell's
// history, ps and the process table would show), and never printed: the
// server answers with the secret's name, hosts, scope and owner alone.

// secretsUsage is the usage of `adaptbot secrets`.
const secretsUsage = `Usage:
  adaptbot secrets set NAME --host HOST[,HOST...] [--shared]   keep a secret; its value is read from standard input
  adaptbot secrets list                                        your secrets and the shared ones (never a value)
  adaptbot secrets delete NAME [--shared]                      remove your secret (--shared: the team's)
Each takes --format text|json.

A tool uses a secret by writing {{secret:NAME}} in a request's URL or
header; the server puts your value in (else the shared one), and only on
its way over HTTPS to one of the secret's hosts. The tool's code, the model
and every record see the placeholder, never the value. --shared (admins
only) makes the secret the team's, used by whoever has none of their own.

On a terminal, set asks for the value without showing it; otherwise it
reads standard input to its end (printf '%s' "$TOKEN" | adaptbot secrets
set TOKEN --host api.example.com), one trailing line break dropped.

These go through the server at ADAPTBOT_ADDR with your key (ADAPTBOT_KEY,
or ADAPTBOT_ADMIN_TOKEN): the server alone keeps the secrets, sealed.
`

// maxSecretInput bounds what set reads: a value is at most 8 KiB.
const maxSecretInput = 8<<10 + 2

// secretsCommand is `adaptbot secrets ...`.
func secretsCommand(ctx context.Context, e Env, args []string) error {
	if len(args) == 0 {
		return UsageError(secretsUsage, "secrets: which subcommand?")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "set", "list", "delete":
	default:
		return UsageError(secretsUsage, "secrets: unknown subcommand %q", sub)
	}
	fs := NewFlags("secrets " + sub)
	format := formatFlag(fs, "text", "text", "json")
	hosts, shared := new(string), new(bool)
	if sub == "set" {
		fs.StringVar(hosts, "host", "", "the hosts the secret may be sent to, separated by commas")
	}
	if sub != "list" {
		fs.BoolVar(shared, "shared", false, "the team's secret (admins only)")
	}
	if err := e.Parse(fs, args, secretsUsage); err != nil {
		return err
	}
	if err := format.check(secretsUsage); err != nil {
		return err
	}
	args = fs.Args()
	c := newClient(e.Config)
	show := func(v any, text string) error {
		if format.value == "json" {
			return writeJSON(e.Stdout, v)
		}
		_, err := io.WriteString(e.Stdout, text)
		return err
	}
	switch sub {
	case "set":
		if len(args) > 1 {
			return UsageError(secretsUsage, "secrets set: the value is read from standard input, never from an argument (which the shell's history and ps would show)")
		}
		if len(args) != 1 {
			return UsageError(secretsUsage, "secrets set: want NAME --host HOST[,HOST...]")
		}
		if strings.TrimSpace(*hosts) == "" {
			return UsageError(secretsUsage, "secrets set: --host is required: the hosts the secret may be sent to (--host api.example.com)")
		}
		value, err := readSecret(e.Stdin, e.Stderr, args[0])
		if err != nil {
			return err
		}
		s, err := c.SetSecret(ctx, args[0], adaptbot.SecretRequest{Value: value, Hosts: strings.Split(*hosts, ","), Shared: *shared})
		if err != nil {
			return err
		}
		return show(s, fmt.Sprintf("%s set (%s), sent only to %s.\n", s.Name, s.Scope, strings.Join(s.Hosts, ", ")))
	case "list":
		if len(args) != 0 {
			return UsageError(secretsUsage, "secrets list: want no arguments")
		}
		list, err := c.Secrets(ctx)
		if err != nil {
			return err
		}
		if format.value == "json" {
			return writeJSON(e.Stdout, list)
		}
		return secretsTable(e.Stdout, list)
	}
	if len(args) != 1 {
		return UsageError(secretsUsage, "secrets delete: want NAME")
	}
	s, err := c.DeleteSecret(ctx, args[0], *shared)
	if err != nil {
		return err
	}
	return show(s, fmt.Sprintf("%s deleted (%s).\n", s.Name, s.Scope))
}

// secretsTable prints the secrets as a table.
func secretsTable(w io.Writer, list *adaptbot.SecretList) error {
	if len(list.Secrets) == 0 {
		_, err := fmt.Fprintln(w, "No secrets yet: set one with adaptbot secrets set NAME --host HOST.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCOPE\tHOSTS\tCREATED\tLAST USED")
	for _, s := range list.Secrets {
		used := "never"
		if !s.LastUsed.IsZero() {
			used = s.LastUsed.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Scope, strings.Join(s.Hosts, ","), s.Created.Local().Format(time.DateTime), used)
	}
	return tw.Flush()
}

// readSecret reads a secret's value from stdin: on a terminal, one line
// typed without being shown, after a prompt on stderr; otherwise all of
// stdin, one trailing line break dropped.
func readSecret(stdin io.Reader, stderr io.Writer, name string) (string, error) {
	if f, ok := terminalFile(stdin); ok {
		fmt.Fprintf(stderr, "Value of %s (not shown): ", name)
		restore := noEcho(f.Fd())
		line, err := bufio.NewReader(io.LimitReader(stdin, maxSecretInput)).ReadString('\n')
		restore()
		fmt.Fprintln(stderr)
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return checkedValue(line)
	}
	if stdin == nil {
		return "", errors.New("secrets set: no value on standard input")
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxSecretInput))
	if err != nil {
		return "", fmt.Errorf("secrets set: read the value: %w", err)
	}
	return checkedValue(string(b))
}

// checkedValue is a value read, without the line break that ended it;
// an empty one is refused here, before it travels.
func checkedValue(v string) (string, error) {
	v = strings.TrimSuffix(strings.TrimSuffix(v, "\n"), "\r")
	if v == "" {
		return "", errors.New("secrets set: the value is empty: type it, or pipe it in (printf '%s' \"$TOKEN\" | adaptbot secrets set NAME --host HOST)")
	}
	return v, nil
}

// runAsker is how `tools run` asks its person to approve a request of the
// tool's: with yes, it allows each one and says so on stderr; on a
// terminal, it shows the request and asks y/N. (Without either the run
// carries no Asker, and such a request is refused.)
func runAsker(stdin io.Reader, stderr io.Writer, yes bool) adaptbot.Asker {
	in := bufio.NewReader(stdin)
	return adaptbot.AskerFunc(func(ctx context.Context, a adaptbot.Approval) (adaptbot.ApprovalAnswer, error) {
		describe(stderr, a)
		if yes {
			fmt.Fprintln(stderr, "Allowed (--yes).")
			return adaptbot.ApprovalAnswer{Decision: adaptbot.Allow}, nil
		}
		fmt.Fprintf(stderr, "Allow it? (expires %s) [y/N] ", a.Expires.Local().Format(time.TimeOnly))
		answer, err := readLine(ctx, in)
		if err != nil {
			fmt.Fprintln(stderr)
			return adaptbot.ApprovalAnswer{}, fmt.Errorf("no answer: %w", err)
		}
		if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
			return adaptbot.ApprovalAnswer{Decision: adaptbot.Allow}, nil
		}
		return adaptbot.ApprovalAnswer{Decision: adaptbot.Deny}, nil
	})
}

// describe shows an approval as a person reads it: the tool, its version,
// the method, the URL and the body, as the tool wrote them (a secret is
// its placeholder).
func describe(w io.Writer, a adaptbot.Approval) {
	fmt.Fprintf(w, "Tool %s (version %d) asks to send:\n  %s %s\n", a.Tool, a.Version, a.Method, a.URL)
	if a.Body != "" {
		for _, line := range strings.Split(strings.TrimRight(a.Body, "\n"), "\n") {
			fmt.Fprintf(w, "  | %s\n", line)
		}
	}
}

// readLine reads one line from in, or gives up when ctx ends (the
// approval expired).
func readLine(ctx context.Context, in *bufio.Reader) (string, error) {
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() {
		s, err := in.ReadString('\n')
		got <- line{s, err}
	}()
	select {
	case l := <-got:
		if l.err != nil && l.s == "" {
			return "", l.err
		}
		return l.s, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// runContext is ctx with the Asker of `tools run`, when it can ask: --yes,
// or a terminal.
func runContext(ctx context.Context, stdin io.Reader, stderr io.Writer, yes bool) context.Context {
	if yes || isTerminal(stdin) {
		return adaptbot.WithAsker(ctx, runAsker(stdin, stderr, yes))
	}
	return ctx
}

// terminalFile is v as a terminal's file, if it is one.
func terminalFile(v any) (*os.File, bool) {
	f, ok := v.(*os.File)
	return f, ok && isTTY(f.Fd())
}
