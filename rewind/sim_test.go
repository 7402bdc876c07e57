package rewind

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/agentkernel/agentkernel/messages"
)

// sim plays a random agent session, building both histories the way the
// agent does: one clock for both, summaries stamped before their
// condense_context message, the assistant-after-user_feedback race, pending
// tool calls, condenses and truncations.
type sim struct {
	rng     *rand.Rand
	ts      int64
	ui      []messages.UIMessage
	api     []messages.APIMessage
	n       int // id counter
	started bool
	log     []string // operations, for failure reports
	// contextEvery makes condenses and truncations rarer: each is skipped
	// unless a draw in [0, contextEvery) is 0. 0 or 1 = never skipped.
	contextEvery int
}

func newSim(rng *rand.Rand) *sim { return &sim{rng: rng, ts: 1_700_000_000_000} }

// next returns a fresh timestamp, sometimes leaving gaps.
func (s *sim) next() int64 {
	s.ts += 1 + int64(s.rng.IntN(2))
	return s.ts
}

func (s *sim) id(prefix string) string {
	s.n++
	return fmt.Sprintf("%s%d", prefix, s.n)
}

func (s *sim) addUI(m messages.UIMessage) { s.ui = append(s.ui, m) }

func (s *sim) addAPI(m messages.APIMessage) { s.api = append(s.api, m) }

// apiTS returns the ts for an API message that follows UI message uiTS:
// usually its own, sometimes the same ts (exact-match path of the cutoff).
func (s *sim) apiTS(uiTS int64) int64 {
	if s.rng.IntN(3) == 0 {
		return uiTS
	}
	return s.next()
}

func (s *sim) userTurn() {
	kind := messages.SayUserFeedback
	if !s.started {
		kind = messages.SayText
		s.started = true
	}
	ts := s.next()
	s.addUI(say(ts, kind))
	s.addAPI(user(s.apiTS(ts)))
	s.log = append(s.log, "user")
}

func (s *sim) assistantTurn() {
	s.addUI(say(s.next(), messages.SayAPIReqStarted))
	if s.rng.IntN(4) == 0 {
		s.addUI(say(s.next(), messages.SayReasoning))
	}
	textTS := s.next()
	s.addUI(say(textTS, messages.SayText))
	switch r := s.rng.IntN(10); {
	case r < 4: // plain answer
		s.addAPI(assistant(s.apiTS(textTS)))
		s.log = append(s.log, "assistant")
	case r < 8: // tool calls
		var ids []string
		for range 1 + s.rng.IntN(2) {
			ids = append(ids, s.id("tu"))
		}
		s.addAPI(toolUse(s.apiTS(textTS), ids...))
		s.addUI(ask(s.next(), []messages.Ask{messages.AskTool, messages.AskCommand}[s.rng.IntN(2)]))
		if s.rng.IntN(8) == 0 { // pending: no result (yet)
			s.log = append(s.log, "tool-pending")
			return
		}
		outTS := s.next()
		s.addUI(say(outTS, []messages.Say{messages.SayCommandOutput, messages.SayCellExecuted}[s.rng.IntN(2)]))
		s.addAPI(toolResult(s.apiTS(outTS), ids...))
		s.log = append(s.log, "tool")
	default: // the race: feedback typed while the answer streamed
		if !s.started {
			s.addAPI(assistant(s.next()))
			return
		}
		s.addUI(say(s.next(), messages.SayUserFeedback))
		s.addAPI(assistant(s.next()))
		s.addAPI(user(s.next()))
		s.log = append(s.log, "race")
	}
	if s.rng.IntN(3) == 0 {
		s.addUI(say(s.next(), messages.SayAPIReqFinished))
	}
}

func (s *sim) condense() {
	id := s.id("c")
	api, err := messages.Condense(s.api, messages.CondenseSpec{ID: id, Summary: "summary " + id, TS: s.next()})
	if err != nil {
		panic(err)
	}
	s.api = api
	s.addUI(condenseUI(s.next(), id))
	s.log = append(s.log, "condense "+id)
}

func (s *sim) truncate() {
	id := s.id("t")
	frac := []float64{0.25, 0.5, 0.75, 1}[s.rng.IntN(4)]
	api, n, err := messages.Truncate(s.api, messages.TruncateSpec{ID: id, Fraction: frac, TS: s.next()})
	if err != nil {
		panic(err)
	}
	if n == 0 {
		return
	}
	s.api = api
	s.addUI(truncUI(s.next(), id, n))
	s.log = append(s.log, fmt.Sprintf("truncate %s %v", id, frac))
}

// step runs one random operation that grows the histories.
func (s *sim) step() {
	switch r := s.rng.IntN(20); {
	case r < 7:
		s.userTurn()
	case r < 15:
		s.assistantTurn()
	case r < 19 && s.contextEvery > 1 && s.rng.IntN(s.contextEvery) != 0:
		s.userTurn()
	case r < 17:
		s.condense()
	case r < 19:
		s.truncate()
	default:
		s.addUI(say(s.next(), []messages.Say{messages.SayCheckpointSaved, messages.SayError, messages.SayKernelStatus}[s.rng.IntN(3)]))
	}
}

// dump renders the histories for a failure report.
func dump(ui []messages.UIMessage, api []messages.APIMessage) string {
	type short struct {
		TS       int64  `json:"ts"`
		Kind     string `json:"k"`
		ID       string `json:"id,omitempty"`
		Parent   string `json:"p,omitempty"`
		TParent  string `json:"tp,omitempty"`
		Blocks   string `json:"b,omitempty"`
		IsSumm   bool   `json:"sum,omitempty"`
		IsMarker bool   `json:"mk,omitempty"`
	}
	var us, as []short
	for _, m := range ui {
		k := string(m.Say) + string(m.Ask)
		id := ""
		if m.ContextCondense != nil {
			id = m.ContextCondense.CondenseID
		}
		if m.ContextTruncation != nil {
			id = m.ContextTruncation.TruncationID
		}
		us = append(us, short{TS: m.TS, Kind: k, ID: id})
	}
	for _, m := range api {
		b := ""
		for _, c := range m.Content {
			b += string(c.Type)[:2] + c.ID + c.ToolUseID + " "
		}
		as = append(as, short{TS: m.TS, Kind: string(m.Role), ID: m.CondenseID + m.TruncationID,
			Parent: m.CondenseParent, TParent: m.TruncationParent, Blocks: b, IsSumm: m.IsSummary, IsMarker: m.IsTruncationMarker})
	}
	u, _ := json.Marshal(us)
	a, _ := json.Marshal(as)
	return "UI:  " + string(u) + "\nAPI: " + string(a)
}
