package service_test

import (
	"context"
	"testing"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/reqid"
	"adaptbot/service"
	"adaptbot/traces"
)

// TestRefuseWritesOneRow: a request refused before its operation began
// gets one row and one trace, the caller's and the door's, with the
// refusal's kind and words, and the error carries their request ID.
func TestRefuseWritesOneRow(t *testing.T) {
	rs, tr := &rows{}, &records{}
	svc := service.New(service.Deps{Rows: rs, Traces: tr})
	ctx := reqid.WithDoor(identity.With(context.Background(), alice), adaptbot.DoorOpenAI)
	e := svc.Refuse(ctx, adaptbot.Refused{Intent: adaptbot.IntentChat,
		Err: &adaptbot.Error{Kind: adaptbot.Limited, Msg: "too many chats from you"}})
	if e == nil || e.Kind != adaptbot.Limited || e.RequestID == "" {
		t.Fatalf("Refuse = %+v, want a limited error with a request ID", e)
	}
	got := rs.list()
	if len(got) != 1 {
		t.Fatalf("%d rows, want 1: %+v", len(got), got)
	}
	r := got[0]
	if r.RequestID != e.RequestID || r.User != alice.Pseudonym || r.Door != adaptbot.DoorOpenAI || r.Intent != adaptbot.IntentChat ||
		r.ErrorKind != "limited" || r.Error != "too many chats from you" {
		t.Errorf("row = %+v", r)
	}
	rec, err := tr.Get(e.RequestID)
	if err != nil || rec.Kind != traces.Chat || rec.User != alice.Pseudonym || rec.Error != "too many chats from you" {
		t.Errorf("trace = %+v, %v", rec, err)
	}

	// A delete's refusal is traced as a change to its tool.
	e = svc.Refuse(ctx, adaptbot.Refused{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildDelete, Tool: "calculator",
		Err: &adaptbot.Error{Kind: adaptbot.Forbidden, Msg: "no"}})
	if rec, _ := tr.Get(e.RequestID); rec.Kind != traces.Change || rec.Tool != "calculator" || len(rs.list()) != 2 {
		t.Errorf("delete's trace = %+v", rec)
	}
}
