package service

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/failures"
	"adaptbot/identity"
	"adaptbot/traces"
)

// MaxComment caps the comment of a feedback, in characters.
const MaxComment = 2000

// Feedback records a person's score of a chat answer, request id: with the
// answer's trace (traces.Record.Rating), and as a FEEDBACK row, which the
// dashboard, /api/benchmarks and `adaptbot report` count apart from
// requests (per tool and over time). An answer takes one feedback, from
// its author (or whoever may read everything): for anyone else it does not
// exist. A thumbs-down on an answer that ran tools adds each call that ran
// as a failure case of kind feedback, which a person confirms or dismisses
// on the tool's page.
func (s *Service) Feedback(ctx context.Context, id string, fb adaptbot.FeedbackRequest) (*adaptbot.FeedbackResult, error) {
	ctx, o, err := s.start(ctx, "feedback", "", identity.ReadOwn)
	fb.Comment = strings.TrimSpace(fb.Comment)
	o.fallback = adaptbot.Internal
	o.row.Intent, o.row.Query, o.row.RatedRequest, o.row.Score = adaptbot.IntentFeedback, fb.Comment, id, fb.Score
	o.row.ParamExtraction, o.row.ToolExecution = benchmarks.NA, benchmarks.NA
	o.rec.Kind, o.rec.Query = traces.Feedback, "feedback on "+id
	switch {
	case err != nil:
	case fb.Score != 1 && fb.Score != -1:
		err = adaptbot.Errorf(adaptbot.Invalid, `"score" must be 1 (thumbs up) or -1 (thumbs down), not %d`, fb.Score)
	case utf8.RuneCountInString(fb.Comment) > MaxComment:
		err = adaptbot.Errorf(adaptbot.Invalid, `"comment" has %d characters; the limit is %d`, utf8.RuneCountInString(fb.Comment), MaxComment)
	case s.d.Traces == nil:
		err = adaptbot.Errorf(adaptbot.NotFound, "requests are not stored on this server (ADAPTBOT_TRACES=off), so their answers cannot be rated")
	}
	if err != nil {
		o.row.Score = 0 // a refused score is not counted
		return nil, o.finish(err)
	}
	// One at a time, so that an answer is rated once.
	s.learn.feedback.Lock()
	defer s.learn.feedback.Unlock()
	rec, err := s.stored(o.who, id)
	switch {
	case err != nil:
	case rec.Kind != traces.Chat:
		err = adaptbot.Errorf(adaptbot.Invalid, "request %s is a %s, not a chat answer: only chat answers take feedback", id, rec.Kind)
	case rec.Rating != nil:
		err = adaptbot.Errorf(adaptbot.Conflict, "the answer of request %s already has its feedback (%s at %s); an answer is rated once",
			id, thumbs(rec.Rating.Score), rec.Rating.Time.Format(time.RFC3339))
	}
	if err != nil {
		o.row.Score = 0
		return nil, o.finish(err)
	}
	var answer agent.Result
	json.Unmarshal(rec.Result, &answer) //nolint:errcheck // an answer without a readable result rates as general
	o.row.Category, o.row.Tools = answer.Path, answer.Tools
	rec.Rating = &traces.Rating{Score: fb.Score, Comment: fb.Comment, Time: time.Now().UTC(), RequestID: o.id}
	if err := s.d.Traces.Add(rec); err != nil {
		o.row.Score = 0
		return nil, o.finish(fmt.Errorf("store the rating of %s: %w", id, err))
	}
	res := &adaptbot.FeedbackResult{RequestID: o.id, Rated: id, Score: fb.Score}
	if fb.Score < 0 {
		res.Cases = s.doubt(answer, rec, o.who, fb.Comment)
	}
	o.rec.Result = marshal(res)
	if err := o.finish(nil); err != nil {
		return nil, err
	}
	return res, nil
}

// doubt adds each tool call of a thumbed-down answer that ran without
// error as a failure case of kind feedback (calls that failed are cases
// already), unconfirmed until a person looks. The calls' arguments are the
// rated request's author's; the comment is who's, who rated it (its author
// or an admin).
func (s *Service) doubt(answer agent.Result, rated traces.Record, who identity.Identity, comment string) []adaptbot.FeedbackCase {
	st := s.learn.cfg.Failures
	if st == nil || s.d.Registry == nil {
		return nil
	}
	var out []adaptbot.FeedbackCase
	for _, step := range answer.Trace {
		if step.Tool == "" || step.Error != "" {
			continue
		}
		if _, ok := s.d.Registry.Entry(step.Tool); !ok {
			continue // an external tool, or one since deleted
		}
		msg := "a person said the answer was wrong"
		cid, _ := st.Record(failures.Call{Tool: step.Tool, Version: step.Version, Args: step.Arguments, Kind: adaptbot.FailFeedback,
			Message: msg, Comment: comment, RequestID: rated.ID, Author: rated.User, CommentBy: who.Pseudonym})
		out = append(out, adaptbot.FeedbackCase{Tool: step.Tool, ID: cid})
	}
	return out
}

func thumbs(score int) string {
	if score > 0 {
		return "thumbs up"
	}
	return "thumbs down"
}
