package failures

import (
	"cmp"
	"slices"
	"time"

	"adaptbot"
)

// pending are changes not yet kept by the backend.
type pending struct {
	deltas  map[string]*Case // Count is the number of new failures
	ops     []op
	repairs []Repair
}

func (p *pending) empty() bool { return len(p.deltas) == 0 && len(p.ops) == 0 && len(p.repairs) == 0 }

// op is a person's or a repair's change to cases.
type op struct {
	what    opKind
	ids     []string
	version int
	at      time.Time
	// expect is opExpect's text.
	expect string
}

type opKind int8

const (
	opConfirm opKind = iota + 1
	opDismiss
	opFixed
	opAccept
	opExpect
)

// merge folds what a later sighting says (kind, message, comment, time,
// request) into c. A failure is stronger than a person's doubt: a case that
// failed stays of its failure's kind and open, whatever feedback adds.
func merge(c *Case, later Case) {
	switch {
	case later.Kind == "":
	case c.Kind == "", c.Kind == adaptbot.FailFeedback && later.Kind != adaptbot.FailFeedback:
		c.Kind, c.Message = later.Kind, later.Message
	case later.Kind == adaptbot.FailFeedback && c.Kind != adaptbot.FailFeedback:
		// keep the failure's kind and message
	case !later.LastSeen.Before(c.LastSeen):
		c.Kind, c.Message = later.Kind, later.Message
	}
	if later.Comment != "" {
		c.Comment, c.CommentBy = later.Comment, later.CommentBy
	}
	c.Authors = addAuthors(c.Authors, later.Authors)
	switch {
	case later.Status == Accepted:
		c.Status = Accepted
	case later.Status == Open && !(c.Status == Accepted && later.Kind == adaptbot.FailError):
		// A failure reopens a case; the same refusal of an accepted
		// one does not.
		c.Status = Open
	}
	if !later.LastSeen.Before(c.LastSeen) {
		c.LastSeen = later.LastSeen
		if later.RequestID != "" {
			c.RequestID, c.RequestBy = later.RequestID, later.RequestBy
		}
	}
	if !later.FirstSeen.IsZero() && (c.FirstSeen.IsZero() || later.FirstSeen.Before(c.FirstSeen)) {
		c.FirstSeen = later.FirstSeen
	}
}

func oldest(cases map[string]*Case) string {
	var id string
	var at time.Time
	for k, c := range cases {
		if id == "" || c.LastSeen.Before(at) {
			id, at = k, c.LastSeen
		}
	}
	return id
}

// apply returns base with p applied, bounded to keep cases: the pending
// failures counted in, then the changes in order, then the repairs added.
func apply(base State, p pending, keep int) State {
	byID := make(map[string]*Case, len(base.Cases)+len(p.deltas))
	order := make([]*Case, 0, len(base.Cases)+len(p.deltas))
	for _, c := range base.Cases {
		c := c
		byID[c.ID] = &c
		order = append(order, &c)
	}
	for id, d := range p.deltas {
		if c, ok := byID[id]; ok {
			c.Count += d.Count
			merge(c, *d)
			continue
		}
		c := *d
		byID[id] = &c
		order = append(order, &c)
	}
	dismissed := map[string]bool{}
	for _, o := range p.ops {
		for _, id := range o.ids {
			c := byID[id]
			if c == nil {
				continue
			}
			switch o.what {
			case opConfirm:
				c.Status = Open
			case opDismiss:
				// A failure seen after the dismissal brings the case back.
				if !c.LastSeen.After(o.at) {
					dismissed[id] = true
				}
			case opFixed:
				c.FixedIn = max(c.FixedIn, o.version)
			case opExpect:
				c.Expect = o.expect
			case opAccept:
				if c.Kind == adaptbot.FailError {
					c.Status, c.FixedIn = Accepted, max(c.FixedIn, o.version)
				}
			}
		}
	}
	out := State{Tool: base.Tool, Cases: make([]Case, 0, len(order))}
	for _, c := range order {
		if !dismissed[c.ID] {
			out.Cases = append(out.Cases, *c)
		}
	}
	slices.SortStableFunc(out.Cases, func(a, b Case) int {
		return cmp.Or(b.LastSeen.Compare(a.LastSeen), cmp.Compare(a.ID, b.ID))
	})
	if len(out.Cases) > keep {
		out.Cases = out.Cases[:keep]
	}
	out.Repairs = append(slices.Clone(base.Repairs), p.repairs...)
	if n := len(out.Repairs); n > MaxRepairs {
		out.Repairs = out.Repairs[n-MaxRepairs:]
	}
	return out
}

// unwrite puts changes that could not be written back before those made
// since.
func unwrite(old, since pending) pending {
	for id, d := range since.deltas {
		if o, ok := old.deltas[id]; ok {
			o.Count += d.Count
			merge(o, *d)
		} else {
			old.deltas[id] = d
		}
	}
	old.ops = append(old.ops, since.ops...)
	old.repairs = append(old.repairs, since.repairs...)
	return old
}
