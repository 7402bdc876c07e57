package webview

import (
	"context"
	"errors"
	"time"
)

// The completion list of the prompt box's @-mentions: as the user types
// @ and letters, the page asks completeMention with what follows the @
// (its prefix), and the server answers that client alone with a
// mentionCompletions frame: the kernel's variables, the notebook's cells
// and the workspace's files that the prefix begins. The Agent decides
// what is offered (session.Host.CompleteMention); the page only shows
// it, as text.

// TypeCompleteMention is the client → server frame that asks for them.
const TypeCompleteMention = "completeMention"

const (
	// maxMentionPrefix caps a completeMention's prefix.
	maxMentionPrefix = 256
	// maxCompleting is how many completeMention frames are answered at
	// once, over the panel's clients; one more gets an error (which the
	// page shows nowhere: the next key typed asks again).
	maxCompleting = 8
	// completeWait bounds one answer.
	completeWait = 5 * time.Second
)

// MentionCompleter is what an Agent offers the completion list, when it
// offers one (an Agent without it answers completeMention with an error). Its method may be called concurrently.
type MentionCompleter interface {
	// CompleteMention returns the completions of prefix (what follows
	// the @), at most limit (0: the Agent's default). Quick and bounded:
	// it is asked at each key typed.
	CompleteMention(ctx context.Context, prefix string, limit int) ([]MentionCompletion, error)
}

// MentionCompletion is one entry of the list: Mention is inserted after
// the @ ("df", "cell:3", "data/sales.csv"; a "data/" of kind dir goes on
// into the folder), Kind is variable, module, cell, file or dir, Detail a
// short note shown beside it.
type MentionCompletion struct {
	Mention string `json:"mention"`
	Kind    string `json:"kind"`
	Detail  string `json:"detail,omitempty"`
}

type mentionCompletionsFrame struct {
	V           int                 `json:"v"`
	Type        string              `json:"type"` // mentionCompletions
	ID          string              `json:"id,omitempty"`
	Prefix      string              `json:"prefix"`
	Completions []MentionCompletion `json:"completions"`
}

// runCompleteMention answers a completeMention of c's, from a goroutine
// of its own: the client's next frames (a prompt sent, a Stop) do not
// wait on a kernel that is slow to list its names. The page matches an
// answer to what is typed by its prefix, so answers may overtake each
// other.
func (p *Panel) runCompleteMention(c *conn, in Inbound) error {
	m := p.agent.Mentions
	if m == nil {
		return errNoMentions
	}
	if p.ctx.Err() != nil {
		return ErrPanelClosed
	}
	select {
	case p.completing <- struct{}{}:
	default:
		return errCompleting
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() { <-p.completing }()
		ctx, cancel := context.WithTimeout(p.ctx, completeWait)
		defer cancel()
		list, err := m.CompleteMention(ctx, in.Prefix, in.Limit)
		if err != nil {
			p.hub.sendTo(c, errorJSON(frameErr(CodeFailed, in.ID, "%s: %v", in.Type, err)))
			return
		}
		if list == nil {
			list = []MentionCompletion{}
		}
		p.hub.sendTo(c, mustJSON(mentionCompletionsFrame{V: ProtocolVersion, Type: "mentionCompletions", ID: in.ID, Prefix: in.Prefix, Completions: list}))
	}()
	return nil
}

// errNoMentions answers completeMention of an Agent without a list.
var errNoMentions = errors.New("this kernel offers no completion of mentions")

// errCompleting answers a completeMention while maxCompleting run.
var errCompleting = errors.New("too many completions of mentions asked at once")
