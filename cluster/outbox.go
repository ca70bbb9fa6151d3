package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultAckWait bounds how long a batch of messages waits for JetStream's
// acknowledgements before what is unacknowledged goes to the spool: the
// longest a request's answer waits on a NATS that has stopped answering.
const DefaultAckWait = 3 * time.Second

// outboxBatch bounds the messages sent before their acknowledgements are
// awaited.
const outboxBatch = 256

// outboxQueue is how many messages wait in memory for the publisher; past
// it, the sender spools its message itself.
const outboxQueue = 4096

// errSpoolFull refuses a message while the spool holds its maximum.
var errSpoolFull = errors.New("the spool is full")

// outbox sends messages to a JetStream stream and makes each durable before
// it says so: acknowledged by JetStream, or written and fsynced to a spool
// on disk (one file a batch, one message a line), which a second goroutine
// sends, in order, once NATS answers again, removing each file once all its
// messages are acknowledged. A message carries a JetStream message id, so one sent twice
// (an acknowledgement lost, a restart between the send and the removal) is
// stored once within the stream's de-duplication window.
//
// The two goroutines are apart so that a round of the spool waiting on a
// silent NATS never holds up the messages being handed over: while the
// spool holds anything, new messages go behind it, at the cost of an fsync.
type outbox struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	o    outboxOptions
	log  *slog.Logger
	what string

	queue   chan *letter
	smu     sync.RWMutex // held to send; closed says the publisher is gone
	closed  bool
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	closing sync.Once
	seq     atomic.Uint64
	waiting atomic.Int64 // handed over and not yet acknowledged
	onDisk  atomic.Int64 // of which in the spool
	dropped atomic.Int64
	full    atomic.Bool
	stream  atomic.Bool // the stream is known to exist

	// files are the spool's files and how many messages each holds.
	fmu   sync.Mutex
	files map[string]int
}

// outboxOptions configures an outbox.
type outboxOptions struct {
	// What names the messages in logs: "row", "trace".
	What string
	// Dir is the spool; Max bounds the messages waiting (in memory and on
	// disk), past which new ones are refused (errSpoolFull) and counted.
	Dir string
	Max int
	// AckWait bounds a batch's wait for its acknowledgements; 0 is
	// DefaultAckWait.
	AckWait time.Duration
	// Ensure makes the stream exist; it is called again after a failure.
	Ensure func(ctx context.Context, js jetstream.JetStream) error
	// Address gives a spooled message's subject and message id, from the
	// file's bytes.
	Address func(body []byte) (subject, id string, err error)
	Log     *slog.Logger
}

// letter is one message handed to the outbox; done, when set, hears once
// whether it is durable.
type letter struct {
	subject, id string
	body        []byte
	done        chan error
}

func (l *letter) settle(err error) {
	if l.done != nil {
		l.done <- err
	}
}

func openOutbox(nc *nats.Conn, o outboxOptions) (*outbox, error) {
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	// Every acknowledgement is awaited a bounded time, and so is a publish
	// while too many wait (the library's own bounds, besides ours).
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(o.AckWait), jetstream.WithPublishAsyncMaxPending(2*outboxBatch))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %s spool: %w", o.What, err)
	}
	b := &outbox{nc: nc, js: js, o: o, log: o.Log, what: o.What, files: map[string]int{},
		queue: make(chan *letter, outboxQueue), kick: make(chan struct{}, 1), stop: make(chan struct{})}
	// A temporary file is a write a crash cut short, never said to be
	// durable to anyone; the spool's files are whole.
	tmps, _ := filepath.Glob(filepath.Join(o.Dir, "*.json.tmp"))
	for _, tmp := range tmps {
		os.Remove(tmp)
	}
	names, err := b.pending()
	if err != nil {
		return nil, err
	}
	total := 0
	for _, name := range names {
		n := 1 // unreadable: it is set aside when its turn comes
		if body, err := os.ReadFile(filepath.Join(o.Dir, name)); err == nil {
			n = len(lines(body))
		}
		b.files[name] = n
		total += n
	}
	b.waiting.Store(int64(total))
	b.onDisk.Store(int64(total))
	b.seq.Store(uint64(time.Now().UnixNano()))
	b.wg.Add(2)
	go b.publish()
	go b.drainLoop()
	b.poke()
	return b, nil
}

// send hands l over without waiting; false if the spool is full.
func (b *outbox) send(l *letter) bool {
	if b.waiting.Load() >= int64(b.o.Max) {
		b.dropped.Add(1)
		if !b.full.Swap(true) {
			b.log.Error("cluster: the "+b.what+" spool is full; new ones are refused until NATS takes some", "max", b.o.Max, "dir", b.o.Dir)
		}
		l.settle(errSpoolFull)
		return false
	}
	b.waiting.Add(1)
	b.smu.RLock()
	defer b.smu.RUnlock()
	if b.closed {
		l.settle(b.spool([]*letter{l})) // for the next run
		return true
	}
	b.queue <- l // past outboxQueue waiting, the sender waits for the publisher: at most about AckWait
	return true
}

// commit hands l over and returns once it is durable (acknowledged, or
// fsynced in the spool), or why it cannot be; or ctx's error if ctx ends
// first (the letter is still sent or spooled).
func (b *outbox) commit(ctx context.Context, l *letter) error {
	l.done = make(chan error, 1)
	b.send(l)
	select {
	case err := <-l.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *outbox) poke() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// close stops both goroutines after one last bounded attempt; what is left
// stays in the spool for the next run.
func (b *outbox) close() {
	b.closing.Do(func() {
		b.smu.Lock()
		b.closed = true
		b.smu.Unlock()
		close(b.stop)
	})
	b.wg.Wait()
	for {
		select {
		case l := <-b.queue:
			b.settleAll([]*letter{l}, b.spool([]*letter{l}))
		default:
			return
		}
	}
}

// publish takes each letter handed over, with the others waiting behind it,
// and delivers them.
func (b *outbox) publish() {
	defer b.wg.Done()
	for {
		select {
		case <-b.stop:
			// One last round for what is queued, bounded; the rest (none:
			// the sends before stop are all queued) goes to disk.
			ctx, cancel := context.WithTimeout(context.Background(), b.o.AckWait)
			defer cancel()
			for {
				select {
				case l := <-b.queue:
					b.deliver(ctx, b.gather(l))
					continue
				default:
				}
				return
			}
		case l := <-b.queue:
			b.deliver(context.Background(), b.gather(l))
		}
	}
}

// gather is first and what waits behind it, up to a batch.
func (b *outbox) gather(first *letter) []*letter {
	batch := []*letter{first}
	for len(batch) < outboxBatch {
		select {
		case l := <-b.queue:
			batch = append(batch, l)
			continue
		default:
		}
		break
	}
	return batch
}

// deliver publishes a batch and awaits every acknowledgement within one
// deadline; what is not acknowledged by then goes to the spool. While the
// spool holds anything, or NATS is away, the whole batch goes there (behind
// what is spooled already).
func (b *outbox) deliver(ctx context.Context, batch []*letter) {
	if b.onDisk.Load() > 0 || !b.nc.IsConnected() || ctx.Err() != nil || b.ensure(ctx) != nil {
		b.settleAll(batch, b.spool(batch))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.o.AckWait)
	defer cancel()
	futures := make([]jetstream.PubAckFuture, len(batch))
	for i, l := range batch {
		f, err := b.js.PublishMsgAsync(b.msg(l.subject, l.body), jetstream.WithMsgID(l.id), jetstream.WithStallWait(b.o.AckWait))
		if err == nil {
			futures[i] = f
		}
	}
	var unsent []*letter
	for i, f := range futures {
		if f != nil && acked(ctx, f) {
			b.stored()
			batch[i].settle(nil)
			continue
		}
		unsent = append(unsent, batch[i])
	}
	if len(unsent) > 0 {
		b.stream.Store(false) // look again: NATS may have lost it, or come back
		b.log.Warn("cluster: "+b.what+"s not acknowledged by NATS yet; they go to the spool", "count", len(unsent))
		b.settleAll(unsent, b.spool(unsent))
	}
}

// acked waits for f's acknowledgement until ctx ends. ctx, not a timer
// channel, bounds the wait: a timer's channel fires once, and the futures
// after the first would wait for ever.
func acked(ctx context.Context, f jetstream.PubAckFuture) bool {
	select {
	case <-f.Ok():
		return true
	case <-f.Err():
	case <-ctx.Done():
	}
	return false
}

func (b *outbox) settleAll(batch []*letter, err error) {
	for _, l := range batch {
		l.settle(err)
	}
}

// stored counts one message acknowledged.
func (b *outbox) stored() {
	b.waiting.Add(-1)
	if b.full.Swap(false) {
		b.log.Warn("cluster: the "+b.what+" spool has room again", "dropped", b.dropped.Load())
	}
}

// spool writes the batch to disk as one file, a message a line, fsynced,
// and then the folder: one fsync for the whole batch. A file's name (a
// time-based sequence, fixed width) orders the spool. It fails only if the
// disk refuses; then the batch is counted out.
func (b *outbox) spool(batch []*letter) error {
	var buf []byte
	for _, l := range batch {
		buf = append(append(buf, l.body...), '\n')
	}
	name := fmt.Sprintf("%020d.json", b.seq.Add(1))
	err := writeSynced(filepath.Join(b.o.Dir, name), buf)
	if err == nil {
		b.fmu.Lock()
		b.files[name] = len(batch)
		b.fmu.Unlock()
		b.onDisk.Add(int64(len(batch)))
		err = syncDir(b.o.Dir)
		b.poke()
	} else {
		b.waiting.Add(-int64(len(batch)))
	}
	if err != nil {
		b.log.Error("cluster: "+b.what+"s could not be spooled", "count", len(batch), "err", err)
		return fmt.Errorf("cluster: spool a %s: %w", b.what, err)
	}
	return nil
}

// lines splits a spool file into its messages; a file of an older release,
// one message without a newline, is one line.
func lines(body []byte) [][]byte {
	var out [][]byte
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			i = len(body)
		}
		if line := bytes.TrimSpace(body[:i]); len(line) > 0 {
			out = append(out, line)
		}
		body = body[min(i+1, len(body)):]
	}
	return out
}

// writeSynced writes a file that is whole once it has its name: a
// temporary file, fsynced, renamed.
func writeSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) // it may hold a person's words
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (b *outbox) pending() ([]string, error) {
	ents, err := os.ReadDir(b.o.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s spool: %w", b.what, err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".json") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// drainLoop sends the spool whenever kicked, and every second while it
// holds anything (NATS may have come back), until stop; at stop it makes one
// last bounded attempt.
func (b *outbox) drainLoop() {
	defer b.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			ctx, cancel := context.WithTimeout(context.Background(), b.o.AckWait)
			b.drain(ctx, true)
			cancel()
			return
		case <-b.kick:
		case <-tick.C:
		}
		if b.onDisk.Load() > 0 {
			b.drain(context.Background(), false)
		}
	}
}

// drain publishes the spooled messages in order, a few files at a time,
// removing each file once all its messages are acknowledged, until the
// spool is empty or a round makes no progress (NATS away, a publish
// refused); the rest waits for the next round. The spool is listed once a
// round, not once a batch: after a long outage it holds many files. A
// round stops between batches when the outbox closes, unless it is the
// last one.
func (b *outbox) drain(ctx context.Context, last bool) {
	if !b.nc.IsConnected() || b.onDisk.Load() <= 0 || ctx.Err() != nil {
		return
	}
	names, err := b.pending()
	if err != nil {
		b.log.Error("cluster: read the "+b.what+" spool", "err", err)
		return
	}
	for len(names) > 0 && b.nc.IsConnected() && ctx.Err() == nil {
		if !last && b.stopping() {
			return
		}
		if err := b.ensure(ctx); err != nil {
			return
		}
		// Whole files, up to about a batch of messages.
		n, msgs := 0, 0
		for n < len(names) && (n == 0 || msgs+b.size(names[n]) <= outboxBatch) {
			msgs += b.size(names[n])
			n++
		}
		batch := names[:n]
		names = names[n:]
		if !b.sendFiles(ctx, batch) {
			b.stream.Store(false)
			b.log.Warn("cluster: "+b.what+"s not published yet; they stay in the spool", "spooled", b.onDisk.Load())
			return
		}
	}
}

// size is how many messages a spool file holds.
func (b *outbox) size(name string) int {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	if n, ok := b.files[name]; ok {
		return n
	}
	return 1
}

// sendFiles publishes the messages of some spool files and clears each file
// whose messages the stream all acknowledged. It reports whether every file
// is gone from the spool.
func (b *outbox) sendFiles(ctx context.Context, names []string) bool {
	ctx, cancel := context.WithTimeout(ctx, b.o.AckWait)
	defer cancel()
	futures := make([][]jetstream.PubAckFuture, len(names))
	ok := make([]bool, len(names))
	for i, name := range names {
		path := filepath.Join(b.o.Dir, name)
		body, err := os.ReadFile(path)
		if err != nil {
			// A file that cannot be read would stop the spool for good:
			// set it aside for a person to look at, and go on.
			b.log.Error("cluster: a spool file cannot be read; set aside as .bad", "file", path, "err", err)
			b.setAside(name)
			continue
		}
		ok[i] = true
		for j, line := range lines(body) {
			subject, id, err := b.o.Address(line)
			if err != nil {
				b.log.Error("cluster: a spooled "+b.what+" is unreadable; dropped", "file", path, "line", j+1, "err", err)
				continue
			}
			if id == "" {
				id = b.what + "-spool-" + strings.TrimSuffix(name, ".json") + "-" + strconv.Itoa(j)
			}
			f, err := b.js.PublishMsgAsync(b.msg(subject, line), jetstream.WithMsgID(id), jetstream.WithStallWait(b.o.AckWait))
			if err != nil {
				return false
			}
			futures[i] = append(futures[i], f)
		}
	}
	for i, fs := range futures {
		if !ok[i] {
			continue // set aside
		}
		for _, f := range fs {
			if !acked(ctx, f) {
				return false // the rest stays for the next round; sent again, it is stored once
			}
		}
		if !b.clear(names[i]) {
			return false
		}
	}
	return true
}

// setAside renames a spool file that cannot be read out of the spool's way
// (it no longer ends in .json), so that it stops every round no more.
func (b *outbox) setAside(name string) {
	path := filepath.Join(b.o.Dir, name)
	if err := os.Rename(path, path+".bad"); err != nil {
		b.log.Error("cluster: set aside a spool file", "file", path, "err", err)
		return
	}
	b.forget(name)
}

// clear removes a sent file from the spool, and reports whether it is gone.
func (b *outbox) clear(name string) bool {
	if err := os.Remove(filepath.Join(b.o.Dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		b.log.Error("cluster: clear sent "+b.what+"s from the spool", "err", err)
		return false
	}
	b.forget(name)
	return true
}

// forget counts a file's messages out of the spool.
func (b *outbox) forget(name string) {
	n := b.size(name)
	b.fmu.Lock()
	delete(b.files, name)
	b.fmu.Unlock()
	b.onDisk.Add(-int64(n))
	b.waiting.Add(-int64(n))
	if b.full.Swap(false) {
		b.log.Warn("cluster: the "+b.what+" spool has room again", "dropped", b.dropped.Load())
	}
}

func (b *outbox) stopping() bool {
	select {
	case <-b.stop:
		return true
	default:
		return false
	}
}

func (b *outbox) ensure(ctx context.Context) error {
	if b.stream.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.o.AckWait)
	defer cancel()
	if err := b.o.Ensure(ctx, b.js); err != nil {
		return err
	}
	b.stream.Store(true)
	return nil
}

func (b *outbox) msg(subject string, body []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = body
	return m
}
