package main

import (
	"context"
	"log/slog"

	"adaptbot/config"
	"adaptbot/llm/provider"
	"adaptbot/traces"
)

// Workspace is what the pages for people need beyond the API: the store of
// recent requests' traces and the model check. A nil *Workspace (the CLI,
// some tests) stores nothing and checks nothing.
type Workspace struct {
	Traces *traces.Store
	Model  *provider.Check
	stop   context.CancelFunc
}

// openWorkspace opens the trace store (unless ADAPTBOT_TRACES=off) and starts
// checking the model: at once, then every minute.
func openWorkspace(ctx context.Context, cfg config.Config, log *slog.Logger) (*Workspace, error) {
	ws := &Workspace{Model: provider.NewCheck(cfg.LLM)}
	if cfg.Traces != "" {
		st, err := traces.Open(cfg.Traces, traces.Options{})
		if err != nil {
			return nil, err
		}
		ws.Traces = st
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
	if w.Traces != nil {
		return w.Traces.Close()
	}
	return nil
}
