package main

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"

	"adaptbot"
	"adaptbot/config"
	"adaptbot/failures"
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
func (w *world) connectNative() {
	tier, ok := w.runner.(*native.Tier)
	if !ok {
		return
	}
	tier.SetExamples(func(tool string, code []byte) []adaptbot.Example {
		var examples []adaptbot.Example
		if json.Unmarshal(w.reg.Examples(tool), &examples) != nil {
			return nil
		}
		return slices.DeleteFunc(examples, func(e adaptbot.Example) bool { return len(e.Input) == 0 })
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
