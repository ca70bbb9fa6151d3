package failures

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"adaptbot"
)

// slowBackend is a Files backend whose writes wait until release is
// closed, as a loaded disk or a cluster's bucket may.
type slowBackend struct {
	Files
	writing chan struct{} // closed when the first write has begun
	once    sync.Once
	release chan struct{}
}

func (b *slowBackend) Update(ctx context.Context, tool string, change func(State) State) (State, error) {
	b.once.Do(func() { close(b.writing) })
	<-b.release
	return b.Files.Update(ctx, tool, change)
}

// TestCasesBeingWrittenAreStillThere: while a flush writes a tool's new
// cases, they are read, triaged and counted as before. They used to vanish
// from reads for as long as the write took, so a thumbs-down dismissed
// then was "no failure case", and the tool's page showed fewer cases.
func TestCasesBeingWrittenAreStillThere(t *testing.T) {
	b := &slowBackend{Files: Files{Dir: t.TempDir()}, writing: make(chan struct{}), release: make(chan struct{})}
	s := load(t, b, 0)
	refused, _ := s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{"text":"no"}`), Kind: adaptbot.FailError, Message: "no"})
	if err := s.Accept("echo", 2, refused); err != nil {
		t.Fatal(err)
	}
	panicked, _ := s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{"text":""}`), Kind: adaptbot.FailPanic, Message: "boom"})
	thumb, _ := s.Record(Call{Tool: "echo", Version: 1, Args: json.RawMessage(`{"text":"hi"}`), Kind: adaptbot.FailFeedback, Message: "wrong"})

	flushed := make(chan error, 1)
	go func() { flushed <- s.Flush(context.Background()) }()
	<-b.writing

	if st := s.Get("echo"); len(st.Cases) != 3 {
		t.Errorf("during the write, the tool has %d cases, want 3: %+v", len(st.Cases), st.Cases)
	}
	if _, ok := s.Case("echo", panicked); !ok {
		t.Error("during the write, the panic's case is gone")
	}
	if err := s.Dismiss("echo", thumb); err != nil {
		t.Errorf("dismissing the thumbs-down during the write: %v", err)
	}
	// The refusal the repair accepted is still accepted when seen again.
	s.Record(Call{Tool: "echo", Version: 2, Args: json.RawMessage(`{"text":"no"}`), Kind: adaptbot.FailError, Message: "no"})
	for _, c := range s.Get("echo").Cases {
		if c.Version == 2 && c.Status != Accepted {
			t.Errorf("a refusal accepted by the write in flight is %s when seen again", c.Status)
		}
	}

	close(b.release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := s.Get("echo")
	if len(st.Cases) != 3 {
		t.Errorf("after the writes, %d cases, want the panic and the refusal twice: %+v", len(st.Cases), st.Cases)
	}
	if _, ok := s.Case("echo", thumb); ok {
		t.Error("the dismissed thumbs-down came back")
	}
}
