package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// watch is a KV watch that starts again after NATS reconnects: the old
// one would take many seconds to notice its consumer is gone, while the
// new one's first values (deletes included) bring what changed meanwhile.
type watch struct {
	nc         *nats.Conn
	start      func() (jetstream.KeyWatcher, error)
	w          jetstream.KeyWatcher
	reconnects uint64
}

// newWatch starts a watch with start, which renew calls again.
func newWatch(nc *nats.Conn, start func() (jetstream.KeyWatcher, error)) (*watch, error) {
	w, err := start()
	if err != nil {
		return nil, err
	}
	return &watch{nc: nc, start: start, w: w, reconnects: nc.Stats().Reconnects}, nil
}

// Updates is the current watch's channel; it changes when renew starts a
// new watch.
func (w *watch) Updates() <-chan jetstream.KeyValueEntry { return w.w.Updates() }

// renew starts the watch again if NATS has reconnected since it started;
// call it every second or so.
func (w *watch) renew() {
	if r := w.nc.Stats().Reconnects; r != w.reconnects && w.nc.IsConnected() {
		if nw, err := w.start(); err == nil {
			w.w.Stop() //nolint:errcheck
			w.w, w.reconnects = nw, r
		}
	}
}

// stop ends the current watch.
func (w *watch) stop() { w.w.Stop() } //nolint:errcheck

// each calls fn with every entry the watch brings (nil once the initial
// values are all in), renewing it after a reconnect, until ctx ends or the
// watch does; what names the watch in the error. It stops the watch.
func (w *watch) each(ctx context.Context, what string, fn func(jetstream.KeyValueEntry)) error {
	defer w.stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			w.renew()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("cluster: the " + what + " watch ended")
			}
			fn(e)
		}
	}
}
