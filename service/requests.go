package service

import (
	"context"
	"errors"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/traces"
)

// Request returns one stored request. A request belongs to its author: for
// anyone else (but whoever may read everything) it does not exist.
func (s *Service) Request(ctx context.Context, id string) (*adaptbot.Trace, error) {
	_, o, err := s.read(ctx, "get request", identity.ReadOwn)
	switch {
	case err != nil:
	case s.d.Traces == nil:
		err = adaptbot.Errorf(adaptbot.NotFound, "requests are not stored on this server (ADAPTBOT_TRACES=off)")
	}
	if err != nil {
		return nil, o.finish(err)
	}
	r, err := s.stored(o.who, id)
	if err := o.finish(err); err != nil {
		return nil, err
	}
	return &r, nil
}

// stored returns the stored request id if who may read it: for anyone else
// it does not exist.
func (s *Service) stored(who identity.Identity, id string) (traces.Record, error) {
	if !isRequestID(id) {
		// Not one of ours (reqid.New's 16 hex digits): answer without
		// scanning the store's files for it.
		return traces.Record{}, adaptbot.Errorf(adaptbot.NotFound, "no stored request with ID %s; request IDs are 16 hexadecimal digits", id)
	}
	r, err := s.d.Traces.Get(id)
	if errors.Is(err, traces.ErrNotFound) || (err == nil && !who.Owns(r.User)) {
		return traces.Record{}, adaptbot.Errorf(adaptbot.NotFound, "no stored request with ID %s; the store keeps the most recent ones", id)
	}
	return r, err
}

// Requests lists the newest stored requests the caller may read, newest
// first, without their results (GET one for the whole).
func (s *Service) Requests(ctx context.Context, limit int) (*adaptbot.RequestList, error) {
	_, o, err := s.read(ctx, "list requests", identity.ReadOwn)
	if err != nil {
		return nil, o.finish(err)
	}
	if s.d.Traces == nil {
		return &adaptbot.RequestList{Requests: []adaptbot.Trace{}}, o.finish(nil)
	}
	limit = min(max(limit, 1), 500)
	all := o.who.Can(identity.ReadAll)
	n := limit
	if !all {
		n = 500 // the caller's own among the newest; others' are skipped
	}
	out := make([]traces.Record, 0, limit)
	for _, r := range s.d.Traces.Recent(n) {
		if len(out) == limit {
			break
		}
		if all || o.who.Owns(r.User) {
			r.Result = nil
			out = append(out, r)
		}
	}
	return &adaptbot.RequestList{Requests: out}, o.finish(nil)
}

// isRequestID reports whether id has the shape reqid.New gives.
func isRequestID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
