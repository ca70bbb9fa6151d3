package main

import (
	"context"
	"log/slog"

	"adaptbot/cluster"
	"adaptbot/config"
	"adaptbot/llm/provider"
	"adaptbot/service"
	"adaptbot/traces"
)

// Workspace is what the pages for people need beyond the API: the store of
// recent requests' traces and the model check. A nil *Workspace (the CLI,
// some tests) stores nothing and checks nothing.
type Workspace struct {
	// Traces is the file beside the CSV, or in a cluster the trace stream
	// every replica reads (so a rating needs no sticky session).
	Traces service.Traces
	Model  *provider.Check
	file   *traces.Store
	stop   context.CancelFunc
}

// openWorkspace opens the trace store (unless ADAPTBOT_TRACES=off): the
// cluster's when link is set, else the file; and starts checking the
// model: at once, then every minute.
func openWorkspace(ctx context.Context, cfg config.Config, link *cluster.Link, log *slog.Logger) (*Workspace, error) {
	ws := &Workspace{Model: provider.NewCheck(cfg.LLM)}
	switch {
	case cfg.Traces == "":
	case link != nil:
		st, err := cluster.OpenTraces(ctx, link.NC, traces.Options{}, log)
		if err != nil {
			return nil, err
		}
		ws.Traces = st
	default:
		st, err := traces.Open(cfg.Traces, traces.Options{})
		if err != nil {
			return nil, err
		}
		ws.Traces, ws.file = st, st
	}
	ctx, ws.stop = context.WithCancel(ctx)
	go ws.Model.Run(ctx, provider.CheckEvery, func(st provider.Status) {
		if *st.Reachable {
			log.Info("model answers", "provider", st.Provider, "url", st.URL)
		} else {
			log.Warn("model does not answer", "provider", st.Provider, "url", st.URL, "err", st.Error)
		}
	})
	return ws, nil
}

// Close stops the model check and closes the trace store.
func (w *Workspace) Close() error {
	if w == nil {
		return nil
	}
	w.stop()
	if w.file != nil {
		return w.file.Close()
	}
	return nil
}
