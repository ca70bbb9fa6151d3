package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"adaptbot"
	"adaptbot/api"
	"adaptbot/config"
	"adaptbot/homelock"
	"adaptbot/identity"
	"adaptbot/identity/users"
)

// `adaptbot users`: the users API's client, or, when no server runs, the
// users file's. A new key is printed once, from the answer that made it,
// and kept nowhere.

// usersUsage is the usage of `adaptbot users`.
const usersUsage = `Usage:
  adaptbot users add NAME --role user|builder|admin   add a person; prints their API key, once
  adaptbot users list                                 the users and their roles (never their keys)
  adaptbot users role NAME ROLE                       change a user's role; their key stays
  adaptbot users rotate NAME                          a new key; the old one stops working at once
  adaptbot users remove NAME [--yes]                  remove a user; their key stops working at once
  adaptbot users sessions NAME [--end ID|all]         a user's browser sign-ins; --end ends one, or all, at once
Each takes --format text|json.

Roles: user (chat, read tools, their own requests), builder (also build,
change, test and run tools), admin (also delete, roll back, approve, manage
users, and read everyone's requests and the dashboard).

These go through the server at ADAPTBOT_ADDR with your key (ADAPTBOT_KEY, or
ADAPTBOT_ADMIN_TOKEN), as an admin. When no server runs and there is no
cluster, list only reads ADAPTBOT_USERS, and add, role, rotate and remove
change it themselves as the folder's one writer, holding the folder's lock
for the moment they take (a server started meanwhile is refused, and
told by which command): how the first admin is made before a server
that listens beyond loopback first starts. A folder a server holds, even
one still starting, refuses them: run them again once it listens.
`

// UsersSubcommands are the subcommands of `adaptbot users`, in the order
// its usage lists them.
func UsersSubcommands() []string {
	return []string{"add", "list", "role", "rotate", "remove", "sessions"}
}

// usersCommand is `adaptbot users ...`.
func usersCommand(ctx context.Context, e Env, args []string) error {
	cfg, stdout, stderr := e.Config, e.Stdout, e.Stderr
	if len(args) == 0 {
		return UsageError(usersUsage, "users: which subcommand?")
	}
	sub, args := args[0], args[1:]
	if !slices.Contains(UsersSubcommands(), sub) {
		return UsageError(usersUsage, "users: unknown subcommand %q", sub)
	}
	fs := NewFlags("users " + sub)
	format := formatFlag(fs, "text", "text", "json")
	role, yes := new(string), new(bool)
	switch sub {
	case "add":
		fs.StringVar(role, "role", "", "the user's role: user, builder or admin")
	case "remove":
		fs.BoolVar(yes, "yes", false, "remove without asking")
	}
	end := new(string)
	if sub == "sessions" {
		fs.StringVar(end, "end", "", "end the session of this ID, or all of them")
	}
	if err := e.Parse(fs, args, usersUsage); err != nil {
		return err
	}
	if err := format.check(usersUsage); err != nil {
		return err
	}
	args = fs.Args()
	want := func(n int, what string) error {
		if len(args) != n {
			return UsageError(usersUsage, "users %s: want %s", sub, what)
		}
		// A NAME no user can have, or a ROLE there is not, is a bad value.
		// (Only a new user's name is checked: sessions and the other
		// changes name someone who is there, or who signed in.)
		if sub == "add" {
			if _, err := users.CleanName(args[0]); err != nil {
				return UsageError(usersUsage, "users add: %v", err)
			}
		}
		if sub == "role" {
			if _, err := identity.ParseRole(args[1]); err != nil {
				return UsageError(usersUsage, "users role: %v", err)
			}
		}
		return nil
	}
	if sub == "sessions" {
		if err := want(1, "NAME [--end ID|all]"); err != nil {
			return err
		}
		return usersSessions(ctx, cfg, args[0], *end, format.value, stdout)
	}
	var op usersOp
	switch sub {
	case "add":
		if err := want(1, "NAME --role ROLE"); err != nil {
			return err
		}
		if *role == "" {
			return UsageError(usersUsage, "users add: --role is required: user, builder or admin")
		}
		if _, err := identity.ParseRole(*role); err != nil {
			return UsageError(usersUsage, "users add: --role: %v", err)
		}
		op = usersOp{remote: func(c adaptbot.UserService) (*adaptbot.UserResult, error) {
			return c.AddUser(ctx, adaptbot.UserRequest{Name: args[0], Role: adaptbot.Role(*role)})
		},
			direct: func(s *users.Store) (users.Info, string, error) { return s.Add(ctx, args[0], identity.Role(*role)) }}
	case "list":
		if err := want(0, "no arguments"); err != nil {
			return err
		}
		return usersList(ctx, cfg, format.value, stdout, stderr)
	case "role":
		if err := want(2, "NAME ROLE"); err != nil {
			return err
		}
		op = usersOp{remote: func(c adaptbot.UserService) (*adaptbot.UserResult, error) {
			return c.SetRole(ctx, args[0], adaptbot.Role(args[1]))
		},
			direct: func(s *users.Store) (users.Info, string, error) {
				u, err := s.SetRole(ctx, args[0], identity.Role(args[1]))
				return u, "", err
			}}
	case "rotate":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		op = usersOp{remote: func(c adaptbot.UserService) (*adaptbot.UserResult, error) { return c.RotateKey(ctx, args[0]) },
			direct: func(s *users.Store) (users.Info, string, error) { return s.Rotate(ctx, args[0]) }}
	case "remove":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		if err := confirm(e.Stdin, stderr, *yes, usersUsage, "users", "remove", args[0], "Their key stops working at once."); err != nil {
			return err
		}
		op = usersOp{remote: func(c adaptbot.UserService) (*adaptbot.UserResult, error) { return c.RemoveUser(ctx, args[0]) },
			direct: func(s *users.Store) (users.Info, string, error) {
				u, err := s.Remove(ctx, args[0])
				return u, "", err
			}}
	}
	out, err := op.remote(newClient(cfg))
	if _, down := errors.AsType[*api.NoServerError](err); down {
		out = new(adaptbot.UserResult)
		var u users.Info
		if u, out.Key, err = usersDirect(ctx, cfg, op.direct, stderr); err != nil {
			return err
		}
		out.User = apiUser(u)
	} else if err != nil {
		return err
	}
	if format.value == "json" {
		return writeJSON(stdout, out)
	}
	return printUser(stdout, sub, out.User, out.Key, out.Note)
}

// usersOp is one change, as a request to the server and as a call on the
// store for when no server runs.
type usersOp struct {
	remote func(adaptbot.UserService) (*adaptbot.UserResult, error)
	direct func(*users.Store) (users.Info, string, error)
}

// apiUser is the store's user as the command line shows it without a
// server: the API's shape, without the ID (it names the user's pseudonym,
// which is shown on its own).
func apiUser(u users.Info) adaptbot.User {
	return adaptbot.User{Name: u.Name, Role: adaptbot.Role(u.Role), Pseudonym: u.Pseudonym, Created: u.Created, Rotated: u.Rotated}
}

// printUser says what a users command did, with the key if it made one.
func printUser(w io.Writer, sub string, u adaptbot.User, key, note string) error {
	var b strings.Builder
	switch sub {
	case "add":
		fmt.Fprintf(&b, "Added %s (%s).", u.Name, u.Role)
	case "role":
		fmt.Fprintf(&b, "%s is now %s.", u.Name, u.Role)
	case "rotate":
		fmt.Fprintf(&b, "%s has a new key; the old one no longer works.", u.Name)
	case "remove":
		fmt.Fprintf(&b, "Removed %s: their key no longer works.", u.Name)
	}
	b.WriteString("\n")
	if key != "" {
		fmt.Fprintf(&b, "\nTheir API key, shown this once (AdaptBot keeps only a hash of it):\n\n  %s\n\n"+
			"They send it as Authorization: Bearer KEY, set it as ADAPTBOT_KEY for the CLI, or paste it into the sign-in page.\n", key)
	}
	if note != "" {
		fmt.Fprintf(&b, "\nNote: %s.\n", note)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// usersList prints the users, from the server or, when none runs, the
// file, which it only reads (readUsers).
func usersList(ctx context.Context, cfg config.Config, format string, stdout, stderr io.Writer) error {
	out, err := newClient(cfg).Users(ctx)
	if _, down := errors.AsType[*api.NoServerError](err); down {
		out, err = readUsers(ctx, cfg, stderr)
	}
	if err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(stdout, out.Users)
	}
	if len(out.Users) == 0 {
		_, err := fmt.Fprintln(stdout, "No users yet: adaptbot users add NAME --role ROLE adds one.")
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tPSEUDONYM\tCREATED\tKEY ROTATED")
	for _, u := range out.Users {
		rotated := "-"
		if !u.Rotated.IsZero() {
			rotated = u.Rotated.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Name, u.Role, u.Pseudonym, u.Created.Local().Format("2006-01-02 15:04"), rotated)
	}
	return tw.Flush()
}

// readUsers lists the users file as it is, for when no server runs: it
// takes no lock, so it works beside a server still starting or a users
// command under way, and writes nothing, not even the server's secret
// (without one, no one has a pseudonym yet, and none is shown).
func readUsers(ctx context.Context, cfg config.Config, stderr io.Writer) (*adaptbot.UserList, error) {
	if cfg.NATSURL != "" {
		return nil, fmt.Errorf("no AdaptBot server answers at %s, and in a cluster the users are the cluster's: ask a replica (adaptbot serve)", cfg.ServerURL())
	}
	list, err := users.ReadFile(cfg.Identity.Users)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "(no server runs at %s: reading %s)\n", cfg.ServerURL(), cfg.Identity.Users)
	out := new(adaptbot.UserList)
	secret := filepath.Join(filepath.Dir(cfg.Identity.Users), users.SecretFile)
	if _, err := users.ReadSecret(secret, false); errors.Is(err, os.ErrNotExist) {
		for _, u := range list {
			out.Users = append(out.Users, adaptbot.User{Name: u.Name, Role: adaptbot.Role(u.Role), Created: u.Created, Rotated: u.Rotated})
		}
		return out, nil
	}
	s, err := users.Open(ctx, readOnlyUsers{path: secret, list: list})
	if err != nil {
		return nil, err
	}
	for _, u := range s.List() {
		out.Users = append(out.Users, apiUser(u))
	}
	return out, nil
}

// readOnlyUsers is a users.Backend over what the users file held when it
// was read, for listing: it makes no secret and takes no change.
type readOnlyUsers struct {
	path string // the secret's
	list []users.User
}

var errUsersReadOnly = errors.New("users: read only here; changes go through the server")

func (b readOnlyUsers) Secret(context.Context) ([]byte, error) {
	return users.ReadSecret(b.path, false)
}

// Load gives a user from before IDs the ID users.Open would give them
// (their name, which keeps their pseudonym), so Open has nothing to write.
func (b readOnlyUsers) Load(context.Context) ([]users.User, error) {
	list := slices.Clone(b.list)
	for i := range list {
		if list[i].ID == "" {
			list[i].ID = list[i].Name
		}
	}
	return list, nil
}
func (readOnlyUsers) Create(context.Context, users.User) error { return errUsersReadOnly }
func (readOnlyUsers) Update(context.Context, users.User) error { return errUsersReadOnly }
func (readOnlyUsers) Delete(context.Context, string) error     { return errUsersReadOnly }

// usersDirect makes a change in the users file itself, for when no server
// runs.
func usersDirect(ctx context.Context, cfg config.Config, fn func(*users.Store) (users.Info, string, error), stderr io.Writer) (u users.Info, key string, err error) {
	err = withStore(ctx, cfg, stderr, func(s *users.Store) error {
		u, key, err = fn(s)
		return err
	})
	return u, key, err
}

// withStore opens the users file for fn while no server runs. It first
// takes the folder's lock (homelock), as a server does, so that for as long
// as it runs it is the folder's one writer: a server that starts meanwhile
// refuses to start and says so, and a server that holds the folder, even
// one still starting and not yet answering, makes this fail. The users
// file's own lock is taken too, for a users file kept outside the folder.
// In a cluster the users are the cluster's, changed only through a
// replica.
func withStore(ctx context.Context, cfg config.Config, stderr io.Writer, fn func(*users.Store) error) error {
	if cfg.NATSURL != "" {
		return fmt.Errorf("no AdaptBot server answers at %s, and in a cluster users change only through a replica: start one (adaptbot serve), then run this again", cfg.ServerURL())
	}
	lock, err := homelock.AcquireAs(cfg.LockDir(), "", "users")
	if _, held := errors.AsType[*homelock.HeldError](err); held {
		return fmt.Errorf("no AdaptBot server answers at %s, but one holds %s (%w); users change through it: run this again once it listens", cfg.ServerURL(), cfg.LockDir(), err)
	}
	if err != nil {
		return err
	}
	defer lock.Release()
	b, err := users.OpenFile(cfg.Identity.Users)
	if errors.Is(err, users.ErrLocked) {
		return fmt.Errorf("the server holds %s but does not answer at %s yet; run this again once it listens", cfg.Identity.Users, cfg.ServerURL())
	}
	if err != nil {
		return err
	}
	defer b.Close()
	s, err := users.Open(ctx, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "(no server runs at %s: using %s directly)\n", cfg.ServerURL(), cfg.Identity.Users)
	return fn(s)
}

// usersSessions lists, or with end ends, the browser sign-ins of name,
// through the server: sessions others hold (the admin token's, an OIDC
// sign-in of someone not stored) are known to the server alone.
func usersSessions(ctx context.Context, cfg config.Config, name, end, format string, stdout io.Writer) error {
	c := newClient(cfg)
	if end != "" {
		id := end
		if id == "all" {
			id = ""
		}
		ended, err := c.EndSessions(ctx, name, id)
		if err != nil {
			return err
		}
		if format == "json" {
			return writeJSON(stdout, ended)
		}
		_, err = fmt.Fprintf(stdout, "Ended %d of %s's sessions: those browsers must sign in again.\n", ended.Ended, name)
		return err
	}
	list, err := c.Sessions(ctx, name)
	if err != nil {
		return err
	}
	sessions := list.Sessions
	if format == "json" {
		return writeJSON(stdout, sessions)
	}
	if len(sessions) == 0 {
		_, err := fmt.Fprintf(stdout, "%s has no sessions.\n", name)
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSIGNED IN WITH\tSTARTED\tEXPIRES")
	for _, x := range sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.ID, x.Method, x.Created.Local().Format("2006-01-02 15:04"), x.Expires.Local().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}
