package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Streams are the JetStream streams AdaptBot creates, its KV buckets and
// object store by their streams' names.
var Streams = []string{RowStream, TraceStream, "KV_" + ToolBucket, "KV_" + LockBucket,
	"KV_" + UserBucket, "KV_" + FailureBucket, "OBJ_" + SourceStore}

// Replicas is how many copies AdaptBot asks JetStream to keep of each of
// its streams and buckets when it creates them: three when nc reaches a
// NATS cluster of three servers or more (so the loss of one loses nothing
// acknowledged), one on a single server. It never lowers a stream an
// operator gave more.
func Replicas(nc *nats.Conn) int {
	if nc.ConnectedClusterName() != "" && len(nc.Servers()) >= 3 {
		return 3
	}
	return 1
}

// replicasFor is how many replicas to set on stream name: Replicas, or as
// many as it has if an operator raised them.
func replicasFor(ctx context.Context, js jetstream.JetStream, name string) int {
	want := Replicas(js.Conn())
	if s, err := js.Stream(ctx, name); err == nil {
		return max(want, s.CachedInfo().Config.Replicas)
	}
	return want
}

// Durability looks at what can lose acknowledged rows, tools or users: each
// stream's storage, replicas and (for the rows) de-duplication window and
// discard policy, and, when monitor names NATS's monitoring address
// (http://host:8222), the servers' fsync policy, which a client cannot see
// otherwise. It returns one warning per finding, in words an operator can
// act on; none when nothing was found.
func Durability(ctx context.Context, nc *nats.Conn, monitor string) []string {
	var out []string
	js, err := jetstream.New(nc)
	if err != nil {
		return []string{"cannot look at the JetStream streams: " + err.Error()}
	}
	clustered := Replicas(nc) > 1
	for _, name := range Streams {
		s, err := js.Stream(ctx, name)
		if err != nil {
			continue // not created here (yet): nothing to say
		}
		cfg := s.CachedInfo().Config
		if cfg.Storage == jetstream.MemoryStorage {
			out = append(out, fmt.Sprintf("stream %s is kept in memory: a NATS restart loses all of it; recreate it with file storage", name))
		}
		if clustered && cfg.Replicas < 3 {
			out = append(out, fmt.Sprintf("stream %s has %d replica(s) on a NATS cluster: the loss of one server can lose what it acknowledged; raise it: nats stream edit %s --replicas 3", name, cfg.Replicas, name))
		}
		if name == RowStream {
			if cfg.Duplicates < rowDuplicates {
				out = append(out, fmt.Sprintf("stream %s de-duplicates over %v, less than the %v a spooled row may wait: a row re-sent after a longer outage can be stored twice; nats stream edit %s --dupe-window %v", name, cfg.Duplicates, rowDuplicates, name, rowDuplicates))
			}
			if cfg.Discard == jetstream.DiscardNew && (cfg.MaxMsgs > 0 || cfg.MaxBytes > 0 || cfg.MaxAge > 0) {
				out = append(out, fmt.Sprintf("stream %s refuses new rows when full (discard new): rows then wait in each replica's spool until it fills, and are dropped past it", name))
			}
		}
	}
	if monitor == "" {
		return out
	}
	w, err := syncPolicy(ctx, monitor)
	switch {
	case err != nil:
		out = append(out, "cannot read NATS's fsync policy from "+monitor+": "+err.Error())
	case w != "":
		out = append(out, w)
	}
	return out
}

// syncPolicy reads a server's /varz and says what its fsync policy can
// lose, or "" when it fsyncs every write before acknowledging it.
func syncPolicy(ctx context.Context, monitor string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(monitor, "/")+"/varz", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("/varz answered %s", resp.Status)
	}
	var v struct {
		Name      string `json:"server_name"`
		JetStream struct {
			Config struct {
				SyncInterval time.Duration `json:"sync_interval"`
				SyncAlways   bool          `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", fmt.Errorf("/varz: %w", err)
	}
	if v.JetStream.Config.SyncAlways {
		return "", nil
	}
	every := v.JetStream.Config.SyncInterval
	if every <= 0 {
		every = 2 * time.Minute // the server's default
	}
	return fmt.Sprintf("NATS server %s fsyncs every %v, not before it acknowledges (Jepsen, NATS 2.12.1): if its machine loses power, the rows, traces and tool changes it acknowledged in that time can be lost; set jetstream { sync_interval: always } in its configuration", v.Name, every), nil
}
