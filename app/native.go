package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"

	"adaptbot"
	"adaptbot/config"
	"adaptbot/egress"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/native"
	"adaptbot/sandbox"
)

// withNative puts the native tier (issue 31) above an interpreted pool of
// workers: tool versions that have served are compiled in the background
// and serve natively once proven. In-process, the tier has no workers to
// confine a native program in, so tools stay interpreted.
func withNative(cfg config.Config, runner sandbox.Runner, opts sandbox.Options, log *slog.Logger) sandbox.Runner {
	if cfg.InProcess {
		return runner
	}
	return native.New(runner, native.Options{
		Mode:    cfg.Native,
		Go:      cfg.NativeGo,
		Dir:     nativeDir(cfg),
		Builds:  cfg.NativeBuilds,
		Sandbox: opts,
		Log:     log,
	})
}

// nativeDir is the native builder's own folder: beside the tools' history
// and failure cases, shared with no one.
func nativeDir(cfg config.Config) string { return filepath.Join(cfg.ToolsDir, ".native") }

// connectNative gives the native tier the tools' examples, from the
// registry, for its differential check, and records a build that differs
// from the interpreter as a failure case of the version it was built from.
// A tool that acts is checked on its examples alone, each answered from
// its exchanges, as the gate runs them: a real call is never run again.
func (w *world) connectNative() {
	tier, ok := w.runner.(*native.Tier)
	if !ok {
		return
	}
	tier.SetExamples(func(tool string, code []byte) native.Sample {
		return nativeSample(tool, code, w.reg.Examples(tool))
	})
	tier.OnMismatch(func(m native.Mismatch) {
		if w.learn == nil || w.learn.store == nil {
			return
		}
		version := 0
		if t, ok := w.reg.Tool(m.Tool); ok && sandbox.Digest(m.Tool, t.Code) == m.Digest {
			version = t.Version
		}
		w.learn.store.Record(failures.Call{Tool: m.Tool, Version: version, Args: m.Input, Kind: adaptbot.FailNativeDiffers, Message: m.Reason()})
	})
}

// nativeSample is what the differential check may run of version code of
// tool, whose stored examples are the JSON examples: their inputs, and
// for a tool that acts (generator.Replays) each answered from its own
// exchanges, with its real calls never run again.
func nativeSample(tool string, code []byte, examples []byte) native.Sample {
	var list []generator.Example
	json.Unmarshal(examples, &list) //nolint:errcheck // none: a tool without examples
	acts, t := generator.Replays(tool, code, list)
	s := native.Sample{Acts: acts}
	for _, e := range list {
		if len(e.Input) == 0 {
			continue
		}
		p := native.Probe{Input: e.Input}
		if acts {
			exchanges := e.HTTP
			p.Bind = func(ctx context.Context) context.Context {
				return egress.Bind(egress.WithReplay(ctx, egress.NewReplay(exchanges)), nil, t)
			}
		}
		s.Examples = append(s.Examples, p)
	}
	return s
}
