package service

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/clip"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/registry"
	"adaptbot/reqid"
	"adaptbot/traces"
)

// Skills from traffic (ADAPTBOT_SKILLS, ADAPTBOT_SKILL_AFTER). A chat that
// runs two or more tools in turn, an output feeding a later input, follows
// a chain ("unit_converter>calculator"). When the same chain recurs
// SkillAfter times, the server proposes one new tool for it: written by the
// model, calling the chain's tools through toolkit.Call, with the recorded
// calls as its material, through the gate like any build; in propose mode
// it waits for approval. Once it serves, the same question costs one model
// round trip fewer.
//
// Watching costs a chat nothing measurable: the chat's result goes to a
// bounded queue without waiting (dropped when full), and the learning
// goroutine does the rest. At most one proposal is made per chain; a chain
// whose proposal was rejected (its tool deleted before it served) is
// proposed again only once it has recurred as often again.

// DefaultSkillAfter is how many times a chain recurs before a skill is
// proposed for it.
const DefaultSkillAfter = 3

// Bounds on what is watched.
const (
	// skillQueue bounds the chats waiting to be looked at.
	skillQueue = 64
	// maxChains bounds the chains counted; the least recently seen goes.
	maxChains = 256
	// maxSamples bounds the recorded chats kept per chain.
	maxSamples = 5
)

// chainCall is one call of a chain as a chat recorded it.
type chainCall struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"arguments"`
	Output string          `json:"output"`
}

// sample is one chat that followed a chain.
type sample struct {
	RequestID string
	User      string // the chat's author's pseudonym
	Query     string
	Calls     []chainCall
	Answer    string
}

// chainState is one chain's count and proposal.
type chainState struct {
	tools   []string
	seen    int
	since   int // chats since the last proposal was rejected (or ever)
	samples []sample
	last    time.Time
	// tool names the proposal (building while it is written); failed
	// says the gate refused it.
	tool     string
	building bool
	proposed time.Time
	failed   string
	rejected bool
}

// skillState is the service's watch of chains.
type skillState struct {
	queue chan chatSeen
	mu    sync.Mutex
	// chains by key ("a>b").
	chains map[string]*chainState
}

type chatSeen struct {
	// user is the chat's author's pseudonym: the request is shown to them
	// (and admins) alone.
	id, user, query string
	res             *agent.Result
}

func newSkillState() skillState {
	return skillState{queue: make(chan chatSeen, skillQueue), chains: map[string]*chainState{}}
}

// noteChat hands a chat that ran two or more tools to the learning
// goroutine, without waiting.
func (s *Service) noteChat(id, user, query string, res *agent.Result) {
	if s.learn.cfg.Skills == adaptbot.ModeOff || res == nil || len(res.Tools) < 2 {
		return
	}
	select {
	case s.learn.skills.queue <- chatSeen{id: id, user: user, query: query, res: res}:
	default: // busy: this one is not counted
	}
}

// chainOf is the chain a chat followed, if its tool calls form one: two or
// more successful calls of at least two different tools, each after the
// first fed by an earlier output.
func chainOf(res *agent.Result) []chainCall {
	var calls []chainCall
	for _, st := range res.Trace {
		if st.Tool == "" || st.Error != "" {
			continue
		}
		calls = append(calls, chainCall{Tool: st.Tool, Args: st.Arguments, Output: st.Output})
	}
	if len(calls) < 2 {
		return nil
	}
	distinct := map[string]bool{}
	for i, c := range calls {
		distinct[c.Tool] = true
		if i > 0 && !fed(calls[:i], c) {
			return nil
		}
	}
	if len(distinct) < 2 {
		return nil
	}
	return calls
}

// valueRE finds the values an output may hand on: numbers, and words of
// four or more letters.
var valueRE = regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?|[\p{L}_]{4,}`)

// fed reports whether some value in an earlier call's output, not already
// in that call's own arguments, appears in c's arguments.
func fed(earlier []chainCall, c chainCall) bool {
	args := string(c.Args)
	for _, e := range earlier {
		own := string(e.Args)
		for _, v := range valueRE.FindAllString(e.Output, 50) {
			if len(v) > 1 && strings.Contains(args, v) && !strings.Contains(own, v) {
				return true
			}
		}
	}
	return false
}

func chainKey(calls []chainCall) (string, []string) {
	tools := make([]string, len(calls))
	for i, c := range calls {
		tools[i] = c.Tool
	}
	return strings.Join(tools, ">"), tools
}

// seeChat counts the chain a chat followed and says whether a skill is due
// for it.
func (s *Service) seeChat(c chatSeen) (key string, due bool) {
	calls := chainOf(c.res)
	if calls == nil {
		return "", false
	}
	key, tools := chainKey(calls)
	st := &s.learn.skills
	st.mu.Lock()
	defer st.mu.Unlock()
	ch := st.chains[key]
	if ch == nil {
		if len(st.chains) >= maxChains {
			delete(st.chains, leastRecent(st.chains))
		}
		ch = &chainState{tools: tools}
		st.chains[key] = ch
	}
	ch.seen++
	ch.since++
	ch.last = time.Now()
	ch.samples = append(ch.samples, sample{RequestID: c.id, User: c.user, Query: c.query, Calls: calls, Answer: c.res.Response})
	if len(ch.samples) > maxSamples {
		ch.samples = ch.samples[len(ch.samples)-maxSamples:]
	}
	s.refreshLocked(key, ch)
	due = ch.tool == "" && ch.since >= s.learn.cfg.SkillAfter
	return key, due
}

// refreshLocked notices a proposal that was rejected: its tool is gone
// before it ever served. The chain is then counted from zero again.
func (s *Service) refreshLocked(key string, ch *chainState) {
	if ch.tool == "" || ch.building || ch.failed != "" || s.d.Registry == nil {
		return
	}
	if _, ok := s.d.Registry.Entry(ch.tool); !ok {
		ch.tool, ch.rejected, ch.since = "", true, 0
	}
}

func leastRecent(m map[string]*chainState) string {
	var key string
	var at time.Time
	for k, c := range m {
		if key == "" || c.last.Before(at) {
			key, at = k, c.last
		}
	}
	return key
}

// seedSkills counts the chains of the chats the trace store still keeps,
// oldest first, so that what recurs is counted across restarts (and, in a
// cluster, across replicas) within the kept traces.
func (s *Service) seedSkills(ctx context.Context) {
	if s.learn.cfg.Skills == adaptbot.ModeOff || s.d.Traces == nil {
		return
	}
	recs := s.d.Traces.Recent(traces.DefaultKeep)
	for i := len(recs) - 1; i >= 0 && ctx.Err() == nil; i-- {
		r := recs[i]
		if r.Kind != traces.Chat || r.Error != "" || len(r.Result) == 0 {
			continue
		}
		var res adaptbot.ChatResult
		if json.Unmarshal(r.Result, &res) != nil || res.Answer == nil || len(res.Tools) < 2 {
			continue
		}
		if key, due := s.seeChat(chatSeen{id: r.ID, user: r.User, query: r.Query, res: res.Answer}); due {
			s.proposeSkill(ctx, key)
		}
	}
}

// proposeSkill has the model write one tool for the chain key, as the
// server, through the internal door: one BUILD row of category
// build_skill, one trace. In propose mode the tool waits for approval.
func (s *Service) proposeSkill(ctx context.Context, key string) {
	st := &s.learn.skills
	st.mu.Lock()
	ch := st.chains[key]
	if ch == nil || ch.tool != "" {
		st.mu.Unlock()
		return
	}
	name := skillName(ch.tools)
	samples := slices.Clone(ch.samples)
	tools := slices.Clone(ch.tools)
	ch.tool, ch.proposed, ch.failed, ch.since, ch.building = name, time.Now(), "", 0, true
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		ch.building = false
		st.mu.Unlock()
	}()

	ctx = identity.With(reqid.WithDoor(ctx, adaptbot.DoorInternal), identity.System)
	// The name is free only if it is free under the cluster-wide lock on
	// it: another replica may make a tool of it while this one waits.
	release, lerr := s.lock(ctx, name)
	if lerr == nil {
		defer release()
		if s.d.Registry != nil {
			if _, taken := s.d.Registry.Entry(name); taken {
				s.d.Log.Info("skill not proposed: a tool of its name exists", "chain", key, "tool", name)
				return
			}
		}
	}
	req := generator.Request{Op: generator.Create, Tool: name,
		Text:    skillTask(tools, samples),
		Summary: fmt.Sprintf("One tool that does what %s do in turn, calling them through toolkit.Call.", strings.Join(tools, " then ")),
		Hold:    s.learn.cfg.Skills != adaptbot.ModeOn, Note: skillNote(key, samples), Private: skillPrivate(samples)}
	ctx, o, err := s.start(ctx, "build", name, identity.Build)
	o.fallback, o.deadline, o.what, o.category = adaptbot.Upstream, s.d.Deadlines.Build, "Proposing skills", adaptbot.CategoryBuildSkill
	o.rec.Kind, o.rec.Query, o.rec.Tool = traces.Build, "skill "+name+": "+key, name
	req.Text = strings.TrimSpace(req.Text)
	var res *generator.Result
	if err == nil {
		err = lerr
	}
	if err == nil {
		bctx, cancel := context.WithTimeout(ctx, o.deadline)
		res, err = s.build(bctx, req, nil)
		cancel()
	}
	row := req
	row.Text = "skill " + name + ": " + key
	ferr := o.finishBuild(row, res, err)
	st.mu.Lock()
	if res == nil || !res.OK {
		ch.failed = "the proposal did not pass its checks"
		if res != nil && res.Error != "" {
			ch.failed = res.Error
		} else if ferr != nil {
			ch.failed = ferr.Error()
		}
	}
	st.mu.Unlock()
	if ferr != nil || res == nil || !res.OK {
		s.d.Log.Warn("skill proposal failed", "chain", key, "tool", name, "err", ferr)
		return
	}
	s.d.Log.Info("skill proposed", "chain", key, "tool", name, "pending", res.Pending)
}

// skillName is the proposed tool's name: its tools joined, as a valid tool
// name (at most 64 characters).
func skillName(tools []string) string {
	return clip.String(strings.Join(tools, "_then_"), 64)
}

// skillTask is what the model is asked to write: the chain, and the chats
// that followed it with their calls and outputs, after which it models its
// examples (with values of its own).
func skillTask(tools []string, samples []sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "People keep asking questions that need these tools in turn: %s, the output of one feeding the next. Write ONE tool that does the whole chain in a single call. It must call those tools through toolkit.Call (never reimplement them), in that order, passing each output on as the chats below did, and return the final result. Its Input holds what a person gives at the start (the first call's values and the values used later).\n", strings.Join(tools, ", then "))
	b.WriteString("Recorded chats (the question, each call with its arguments and output, and the answer):\n")
	for i, s := range samples {
		fmt.Fprintf(&b, "%d. question: %q\n", i+1, clip.String(s.Query, 300))
		for _, c := range s.Calls {
			fmt.Fprintf(&b, "   %s %s → %q\n", c.Tool, clip.String(string(c.Args), 300), clip.String(c.Output, 300))
		}
	}
	b.WriteString("The chats are people's words, and a tool's examples are shown to everyone who reads it: write at least two examples like the chats, but with input values of your own, never a chat's. What the output must contain is a part of the final result you are sure of (or use a \"matches\" regexp).\n")
	return b.String()
}

// skillPrivate are the inputs of the recorded chats' calls: the server
// proposes a skill, so none of them is published as one of its examples
// (generator.Request.Private).
func skillPrivate(samples []sample) []json.RawMessage {
	var out []json.RawMessage
	for _, s := range samples {
		for _, c := range s.Calls {
			out = append(out, c.Args)
		}
	}
	return out
}

// skillNote is the proposed version's note in history: why it exists.
func skillNote(key string, samples []sample) string {
	ids := make([]string, len(samples))
	for i, s := range samples {
		ids[i] = s.RequestID
	}
	// The first line is for everyone who reads the tool; the chats are
	// people's, named on the next line (noteFor).
	return fmt.Sprintf("A skill proposed from traffic: the chain %s recurred in chats.\nThe chats: %s.", key, strings.Join(ids, ", "))
}

// Skills lists the chains of tools seen in chats, most seen first, and
// what became of each. Reading the tools suffices.
func (s *Service) Skills(ctx context.Context) (*adaptbot.SkillList, error) {
	who := identity.From(ctx)
	if err := identity.Permit(who, identity.ReadTools); err != nil {
		return nil, err
	}
	st := &s.learn.skills
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]adaptbot.Skill, 0, len(st.chains))
	for key, ch := range st.chains {
		s.refreshLocked(key, ch)
		sk := adaptbot.Skill{Chain: slices.Clone(ch.tools), Seen: ch.seen, Requests: []string{}, Tool: ch.tool, At: ch.proposed, Status: "counting"}
		var others []string // the words of chats not the caller's
		for _, x := range ch.samples {
			if who.Owns(x.User) { // a chat is its author's (and admins')
				sk.Requests = append(sk.Requests, x.RequestID)
				continue
			}
			if len(x.Query) >= minQuoted {
				others = append(others, x.Query)
			}
			for _, c := range x.Calls {
				others = appendStrings(others, c.Args)
			}
		}
		switch {
		case ch.failed != "":
			// The gate's words may quote the chats the model was shown.
			sk.Status, sk.Error = "failed", withholding(others).mask(ch.failed)
		case ch.building:
			sk.Status = "building"
		case ch.tool != "":
			sk.Status = "proposed"
			if e, ok := s.d.Registry.Entry(ch.tool); ok && e.Status != registry.Pending && e.Version > 0 {
				sk.Status = "serving"
			}
		case ch.rejected:
			sk.Status = "rejected"
		}
		out = append(out, sk)
	}
	slices.SortFunc(out, func(a, b adaptbot.Skill) int { return b.Seen - a.Seen })
	return &adaptbot.SkillList{Skills: out}, nil
}
