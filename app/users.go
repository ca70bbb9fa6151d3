package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/gofiber/fiber/v2"

	"adaptbot/identity"
	"adaptbot/identity/users"
	"adaptbot/service"
)

// The users API (admin only) and `adaptbot users`. A key is shown once: in
// the answer to the request that made it, sent with Cache-Control:
// no-store, and never logged.

// mayManage refuses a caller who may not manage users (403), with the one
// permission check every operation makes.
func mayManage(c *fiber.Ctx) error {
	return service.Permit(identity.From(c.UserContext()), identity.Manage)
}

// manageBody refuses a caller who may not manage users, and decodes the
// request's body.
func manageBody(c *fiber.Ctx) (userRequest, error) {
	var req userRequest
	if err := mayManage(c); err != nil {
		return req, err
	}
	return req, decodeJSON(c.Body(), &req, true)
}

// userError turns the store's errors into statuses.
func userError(err error) error {
	switch {
	case errors.Is(err, users.ErrInvalid):
		return badRequest(err.Error())
	case errors.Is(err, users.ErrNotFound):
		return notFound(err.Error())
	case errors.Is(err, users.ErrExists):
		return &service.Error{Kind: service.Conflict, Msg: err.Error()}
	}
	return err
}

// userRequest is the body of POST /api/users and PATCH /api/users/NAME.
type userRequest struct {
	Name string        `json:"name"`
	Role identity.Role `json:"role"`
}

// keyAnswer is an answer that carries a new key: never cached.
func keyAnswer(c *fiber.Ctx, status int, u users.Info, key, note string) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	body := fiber.Map{"user": u, "key": key}
	if note != "" {
		body["note"] = note
	}
	return c.Status(status).JSON(body)
}

// singleUserNote is said when a user is added to a server that is
// single-user until it restarts.
const singleUserNote = "this server is single-user on loopback until it restarts: after that, every caller needs a key or a sign-in, so make sure an admin has one"

// handleUserList is GET /api/users.
func (e *authEdge) handleUserList() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := mayManage(c); err != nil {
			return err
		}
		list := e.store.List()
		return c.JSON(fiber.Map{"users": list, "count": len(list)})
	}
}

// handleUserAdd is POST /api/users {"name", "role"}: 201 with the key.
func (e *authEdge) handleUserAdd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := manageBody(c)
		if err != nil {
			return err
		}
		u, key, err := e.store.Add(c.UserContext(), req.Name, req.Role)
		if err != nil {
			return userError(err)
		}
		e.log.Info("user added", "user", u.Pseudonym, "role", u.Role, "by", identity.From(c.UserContext()).Pseudonym)
		note := ""
		if e.auth.SingleUser() {
			note = singleUserNote
		}
		return keyAnswer(c, fiber.StatusCreated, u, key, note)
	}
}

// handleUserRole is PATCH /api/users/NAME {"role"}.
func (e *authEdge) handleUserRole() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := manageBody(c)
		if err != nil {
			return err
		}
		u, err := e.store.SetRole(c.UserContext(), c.Params("name"), req.Role)
		if err != nil {
			return userError(err)
		}
		e.log.Info("user's role changed", "user", u.Pseudonym, "role", u.Role, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"user": u})
	}
}

// handleUserRemove is DELETE /api/users/NAME: their key and sessions stop
// working at once.
func (e *authEdge) handleUserRemove() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := mayManage(c); err != nil {
			return err
		}
		u, err := e.store.Remove(c.UserContext(), c.Params("name"))
		if err != nil {
			return userError(err)
		}
		e.log.Info("user removed", "user", u.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"user": u, "removed": true})
	}
}

// handleUserRotate is POST /api/users/NAME/rotate: a new key; the old one
// and its sessions stop working at once.
func (e *authEdge) handleUserRotate() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := mayManage(c); err != nil {
			return err
		}
		u, key, err := e.store.Rotate(c.UserContext(), c.Params("name"))
		if err != nil {
			return userError(err)
		}
		e.log.Info("user's key rotated", "user", u.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return keyAnswer(c, fiber.StatusOK, u, key, "")
	}
}

// usersUsage is the usage of `adaptbot users`.
const usersUsage = `Usage:
  adaptbot users add NAME --role user|builder|admin   add a person; prints their API key, once
  adaptbot users list                                 the users and their roles (never their keys)
  adaptbot users role NAME ROLE                       change a user's role; their key stays
  adaptbot users rotate NAME                          a new key; the old one stops working at once
  adaptbot users remove NAME [--yes]                  remove a user; their key stops working at once
Each takes --format text|json.

Roles: user (chat, read tools, their own requests), builder (also build,
change, test and run tools), admin (also delete, roll back, approve, manage
users, and read everyone's requests and the dashboard).

These go through the server at ADAPTBOT_ADDR with your key (ADAPTBOT_KEY, or
ADAPTBOT_ADMIN_TOKEN), as an admin. When no server runs and there is no
cluster, they change ADAPTBOT_USERS directly: how the first admin is made
before a server that listens beyond loopback first starts.
`

// usersCommand is `adaptbot users ...`.
func usersCommand(ctx context.Context, cfg Config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError(usersUsage, "users: which subcommand?")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "add", "list", "role", "rotate", "remove":
	default:
		return usageError(usersUsage, "users: unknown subcommand %q", sub)
	}
	fs := newFlags("users " + sub)
	format := formatFlag(fs, "text", "text", "json")
	role, yes := new(string), new(bool)
	switch sub {
	case "add":
		fs.StringVar(role, "role", "", "the user's role: user, builder or admin")
	case "remove":
		fs.BoolVar(yes, "yes", false, "remove without asking")
	}
	if err := parseFlags(cfg, fs, args, usersUsage); err != nil {
		return err
	}
	if err := format.check(usersUsage); err != nil {
		return err
	}
	args = fs.Args()
	want := func(n int, what string) error {
		if len(args) != n {
			return usageError(usersUsage, "users %s: want %s", sub, what)
		}
		return nil
	}
	var op usersOp
	switch sub {
	case "add":
		if err := want(1, "NAME --role ROLE"); err != nil {
			return err
		}
		if *role == "" {
			return usageError(usersUsage, "users add: --role is required: user, builder or admin")
		}
		op = usersOp{method: http.MethodPost, path: "/api/users", body: userRequest{Name: args[0], Role: identity.Role(*role)},
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
		op = usersOp{method: http.MethodPatch, path: "/api/users/" + url.PathEscape(args[0]), body: userRequest{Role: identity.Role(args[1])},
			direct: func(s *users.Store) (users.Info, string, error) {
				u, err := s.SetRole(ctx, args[0], identity.Role(args[1]))
				return u, "", err
			}}
	case "rotate":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		op = usersOp{method: http.MethodPost, path: "/api/users/" + url.PathEscape(args[0]) + "/rotate",
			direct: func(s *users.Store) (users.Info, string, error) { return s.Rotate(ctx, args[0]) }}
	case "remove":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		if err := confirm(stdin, stderr, *yes, usersUsage, "users", "remove", args[0], "Their key stops working at once."); err != nil {
			return err
		}
		op = usersOp{method: http.MethodDelete, path: "/api/users/" + url.PathEscape(args[0]),
			direct: func(s *users.Store) (users.Info, string, error) {
				u, err := s.Remove(ctx, args[0])
				return u, "", err
			}}
	}
	var out struct {
		User users.Info `json:"user"`
		Key  string     `json:"key,omitempty"`
		Note string     `json:"note,omitempty"`
	}
	err := newClient(cfg).call(ctx, op.method, op.path, op.body, &out)
	if _, down := errors.AsType[*noServerError](err); down {
		if out.User, out.Key, err = usersDirect(ctx, cfg, op.direct, stderr); err != nil {
			return err
		}
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
	method, path string
	body         any
	direct       func(*users.Store) (users.Info, string, error)
}

// printUser says what a users command did, with the key if it made one.
func printUser(w io.Writer, sub string, u users.Info, key, note string) error {
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
// file (reading needs no lock).
func usersList(ctx context.Context, cfg Config, format string, stdout, stderr io.Writer) error {
	var out struct {
		Users []users.Info `json:"users"`
	}
	err := newClient(cfg).call(ctx, http.MethodGet, "/api/users", nil, &out)
	if _, down := errors.AsType[*noServerError](err); down {
		err = withStore(ctx, cfg, stderr, func(s *users.Store) error { out.Users = s.List(); return nil })
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

// usersDirect makes a change in the users file itself, for when no server
// runs.
func usersDirect(ctx context.Context, cfg Config, fn func(*users.Store) (users.Info, string, error), stderr io.Writer) (u users.Info, key string, err error) {
	err = withStore(ctx, cfg, stderr, func(s *users.Store) error {
		u, key, err = fn(s)
		return userError(err)
	})
	return u, key, err
}

// withStore opens the users file for fn while no server runs. The file's
// lock keeps the one-writer rule: a server that starts meanwhile waits for
// nothing but fails to take it, and says so; a server that holds it makes
// this fail. In a cluster the users are the cluster's, changed only
// through a replica.
func withStore(ctx context.Context, cfg Config, stderr io.Writer, fn func(*users.Store) error) error {
	if cfg.NATSURL != "" {
		return fmt.Errorf("no AdaptBot server answers at %s, and in a cluster users change only through a replica: start one (adaptbot serve), then run this again", cfg.serverURL())
	}
	b, err := users.OpenFile(cfg.Identity.Users)
	if errors.Is(err, users.ErrLocked) {
		return fmt.Errorf("the server holds %s but does not answer at %s yet; run this again once it listens", cfg.Identity.Users, cfg.serverURL())
	}
	if err != nil {
		return err
	}
	defer b.Close()
	s, err := users.Open(ctx, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "(no server runs at %s: using %s directly)\n", cfg.serverURL(), cfg.Identity.Users)
	return fn(s)
}
