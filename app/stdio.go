package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"adaptbot"
	"adaptbot/config"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/identity/users"
	mcpserver "adaptbot/mcp/server"
	"adaptbot/redact"
	"adaptbot/reqid"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// serveMCP is `adaptbot mcp` with no server running: the folder's tools
// over stdin and stdout, served by this process as the folder's one writer
// (the caller holds the folder's lock). It wires what the server wires for
// a tool call (the world, the service over the CSV, the traces and the
// failure cases, the registry's watch), so each call through the door mcp
// writes its row, its trace and its failure cases as a call to /mcp does.
// The caller is the local user, or the user whose key ADAPTBOT_KEY is.
// Nothing is written to stdout but the protocol.
func serveMCP(ctx context.Context, cfg config.Config, h hooks, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	log := slog.New(redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	metrics, stopTelemetry, err := startTelemetry(ctx, cfg, log, io.Discard)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	who, key, err := stdioCaller(ctx, cfg)
	if err != nil {
		return err
	}
	w, err := openWorld(ctx, cfg, h, getenv, log, metrics)
	if err != nil {
		return err
	}
	defer w.Close()
	bench, err := w.openRecords(ctx)
	if err != nil {
		return err
	}
	defer bench.Close()
	var ws *Workspace
	if cfg.Traces != "" {
		st, err := traces.Open(cfg.Traces, traces.Options{})
		if err != nil {
			return err
		}
		ws = &Workspace{Traces: st, closer: st, stop: func() {}}
		defer ws.Close()
	}
	// The secrets are the server's: the file beside the users, sealed
	// under the key the server derives.
	back, err := openSecretsFile(cfg)
	if err != nil {
		return err
	}
	if w.vault, err = openVault(back, key); err != nil {
		return err
	}
	svc := w.service(bench, nil, ws, metrics, nil)
	defer w.learn.start(svc, log)()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// As the folder's owner it takes hand edits in, and re-runs the
	// examples of what they change, as the server does.
	w.gen.RetestOnChange(ctx, func(rep *generator.ExampleReport, err error) {
		if err == nil && !rep.OK {
			log.Warn("a changed tool fails its examples", "tool", rep.Tool, "version", rep.Version, "failures", rep.Failures())
		}
	})
	stopWatch, err := w.watch(ctx)
	if err != nil {
		return err
	}
	defer stopWatch()

	call := func(ctx context.Context, name string, args json.RawMessage) (string, error) {
		ctx = identity.With(reqid.WithDoor(ctx, adaptbot.DoorMCP), who)
		res, err := svc.Run(ctx, name, args)
		if ae, ok := errors.AsType[*toolbox.ArgsError](err); ok {
			// The model reads this as the result: the tool's name with the
			// reason, as the toolbox words it.
			return "", ae
		}
		if err != nil {
			return "", err
		}
		return res.Output, nil
	}
	srv := mcpserver.New(w.box, mcpserver.Options{Log: log, Call: call})
	return srv.ServeStdio(ctx, stdin, stdout)
}

// stdioCaller is who calls through `adaptbot mcp` when it serves the folder
// itself: the user whose key ADAPTBOT_KEY is, when it is set (a key that is
// no one's is refused), else the local user, with the pseudonym the server
// gives each. The users file is opened as the server opens it (its secret
// made if it is not there yet); it cannot change while this process holds
// the folder, so the caller stays who they are until it ends. key is what
// the secrets' key is derived from, as the server derives it.
func stdioCaller(ctx context.Context, cfg config.Config) (who identity.Identity, key []byte, err error) {
	b, err := users.OpenFile(cfg.Identity.Users)
	if errors.Is(err, users.ErrLocked) {
		return identity.Identity{}, nil, fmt.Errorf("%w: another AdaptBot holds it", err)
	}
	if err != nil {
		return identity.Identity{}, nil, err
	}
	defer b.Close()
	store, err := users.Open(ctx, b)
	if err != nil {
		return identity.Identity{}, nil, err
	}
	key = store.Key(secretsKey)
	if k := cfg.Identity.Key; k != "" {
		u, ok := store.Verify(k)
		if !ok {
			return identity.Identity{}, nil, fmt.Errorf("ADAPTBOT_KEY is not the key of any user in %s: set a user's key, or unset it to call as the local user", cfg.Identity.Users)
		}
		return identity.Identity{Name: u.Name, Role: u.Role, Pseudonym: u.Pseudonym, Method: identity.Key}, key, nil
	}
	who = identity.Local
	who.Pseudonym = store.Pseudonym(who.Name)
	return who, key, nil
}
