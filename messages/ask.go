package messages

// AskClass groups ask kinds by what the task is doing while the ask is open.
type AskClass int

// Ask classes, as Roo-Code defines them.
const (
	// AskClassUnknown is the class of a kind this package does not define.
	AskClassUnknown AskClass = iota
	// AskClassIdle: the task has stopped (finished, failed, hit a limit) and
	// waits for the user to start it again.
	AskClassIdle
	// AskClassResumable: an interrupted task that can be resumed.
	AskClassResumable
	// AskClassInteractive: the task is blocked on the user's answer (a
	// question, an approval).
	AskClassInteractive
	// AskClassNonBlocking: informational; the task keeps running.
	AskClassNonBlocking
)

func (c AskClass) String() string {
	switch c {
	case AskClassIdle:
		return "idle"
	case AskClassResumable:
		return "resumable"
	case AskClassInteractive:
		return "interactive"
	case AskClassNonBlocking:
		return "non-blocking"
	default:
		return "unknown"
	}
}

// ClassOf returns the class of an ask kind; AskClassUnknown if a is not one
// of the kinds in [Asks].
func ClassOf(a Ask) AskClass {
	switch a {
	case AskCompletionResult, AskAPIReqFailed, AskResumeCompletedTask,
		AskMistakeLimitReached, AskAutoApprovalMaxReqReached:
		return AskClassIdle
	case AskResumeTask:
		return AskClassResumable
	case AskFollowup, AskCommand, AskTool, AskUseMCPServer:
		return AskClassInteractive
	case AskCommandOutput:
		return AskClassNonBlocking
	default:
		return AskClassUnknown
	}
}

// IsIdle reports whether a is an idle ask (see [AskClassIdle]).
func (a Ask) IsIdle() bool { return ClassOf(a) == AskClassIdle }

// IsResumable reports whether a is a resumable ask (see [AskClassResumable]).
func (a Ask) IsResumable() bool { return ClassOf(a) == AskClassResumable }

// IsInteractive reports whether a is an interactive ask (see [AskClassInteractive]).
func (a Ask) IsInteractive() bool { return ClassOf(a) == AskClassInteractive }

// IsNonBlocking reports whether a is a non-blocking ask (see [AskClassNonBlocking]).
func (a Ask) IsNonBlocking() bool { return ClassOf(a) == AskClassNonBlocking }

// Blocks reports whether the task waits on the user while an ask of kind a
// is open: every known kind except the non-blocking ones.
func (a Ask) Blocks() bool {
	c := ClassOf(a)
	return c != AskClassUnknown && c != AskClassNonBlocking
}

// AskClass returns the class of m's ask, or AskClassUnknown when m is not an ask.
func (m UIMessage) AskClass() AskClass {
	if m.Type != TypeAsk {
		return AskClassUnknown
	}
	return ClassOf(m.Ask)
}
