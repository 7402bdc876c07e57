package agent

import (
	"errors"
	"fmt"
	"strings"
)

// Recorder is implemented by a provider that records the run to a cassette
// (replay.Recorder): besides the model's answers it keeps the tool results
// the loop sent and the approval answers it got.
type Recorder interface {
	RecordToolResult(id, text string) error
	RecordApproval(ask, answer string) error
}

// Approvals is implemented by a provider that replays a recorded run
// (replay.Player): approvals are answered as they were when recorded, and
// asking anything else is a divergence.
type Approvals interface {
	NextApproval(ask string) (string, error)
}

// errReplay ends a turn whose replay diverged from its recording.
type errReplay struct{ err error }

func (e *errReplay) Error() string { return "agent: replay: " + e.err.Error() }
func (e *errReplay) Unwrap() error { return e.err }

// fatal reports whether a tool-call error must end the turn (the store
// failed, or a replay diverged) rather than go back to the model.
func fatal(err error) bool {
	var se *storeError
	var re *errReplay
	return errors.As(err, &se) || errors.As(err, &re)
}

// encodeAnswer is an approval answer as a cassette keeps it: the answer,
// and who gave it, so that a replay records the same decision.
func encodeAnswer(r Response) string {
	var a string
	switch r.Kind {
	case ResponseYes:
		a = "allow"
	case ResponseAllowAll:
		a = "allowAll"
	case ResponseMessage:
		a = "message:" + r.Text
	default:
		a = "deny"
	}
	if r.By != "" {
		a = "by=" + r.By + ";" + a
	}
	return a
}

// decodeAnswer reads an approval answer recorded by encodeAnswer.
func decodeAnswer(s string) (Response, error) {
	by := "replay"
	if rest, ok := strings.CutPrefix(s, "by="); ok {
		b, a, found := strings.Cut(rest, ";")
		if !found {
			return Response{}, fmt.Errorf("malformed recorded answer %q", s)
		}
		by, s = b, a
	}
	switch {
	case s == "allow":
		return Response{Kind: ResponseYes, By: by}, nil
	case s == "allowAll":
		return Response{Kind: ResponseAllowAll, By: by}, nil
	case s == "deny":
		return Response{Kind: ResponseNo, By: by}, nil
	case strings.HasPrefix(s, "message:"):
		return Response{Kind: ResponseMessage, Text: strings.TrimPrefix(s, "message:"), By: by}, nil
	}
	return Response{}, fmt.Errorf("unknown recorded answer %q", s)
}
