package cluster

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Names in NATS that replicas and workers share. docs/cluster.md's security
// section lists them with the permissions each role needs.
const (
	// FleetRun and FleetCompile are the subjects of tool calls and compile
	// checks; workers answer them in the queue group FleetQueue.
	FleetRun     = "adaptbot.fleet.run"
	FleetCompile = "adaptbot.fleet.compile"
	FleetQueue   = "adaptbot-workers"
	// FleetNestedPrefix and FleetBackPrefix carry the calls a tool running
	// on a fleet worker makes of other tools (toolkit.Call): the worker
	// sends each to the replica that sent the call, on a subject of
	// FleetNestedPrefix that the call named, and the replica answers on the
	// worker's subject of FleetBackPrefix.
	FleetNestedPrefix = "adaptbot.fleet.nested."
	FleetBackPrefix   = "adaptbot.fleet.back."
	// RowStream is the stream of benchmark rows, on subjects
	// RowSubjectPrefix + replica id.
	RowStream        = "ADAPTBOT_ROWS"
	RowSubjectPrefix = "adaptbot.rows."
)

// Options says how to reach NATS.
type Options struct {
	// URL is the server list, comma-separated (nats://host:4222). A token
	// or user and password may sit in it (nats://token@host:4222).
	URL string
	// Creds is a credentials file (a user JWT and its nkey seed); empty
	// for none.
	Creds string
	// Name names the connection in the server's monitoring (the replica
	// or worker id).
	Name string
	// Monitor is a NATS server's monitoring address (http://host:8222),
	// where a replica reads the fsync policy at start-up; empty for none.
	Monitor string
	// Log receives connection events; nil means slog.Default().
	Log *slog.Logger
}

// Connect connects to NATS and keeps reconnecting for as long as the
// connection lives, so a replica rides out a NATS restart. It fails only if
// the first connection fails.
func Connect(o Options) (*nats.Conn, error) {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("cluster: NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("cluster: NATS reconnected", "url", Redact(nc.ConnectedUrl()))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
			subj := ""
			if s != nil {
				subj = s.Subject
			}
			log.Warn("cluster: NATS error", "subject", subj, "err", err)
		}),
	}
	if o.Creds != "" {
		if _, err := os.Stat(o.Creds); err != nil {
			return nil, fmt.Errorf("cluster: NATS credentials: %w", err)
		}
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to NATS at %s: %w", Redact(o.URL), err)
	}
	return nc, nil
}

// Redact hides a token or password in a NATS URL list, for logs and
// /healthz.
func Redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = url.User("redacted")
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// ReplicaID is the default id of a replica: host name and process id, unique
// among the replicas that run at once.
func ReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}
