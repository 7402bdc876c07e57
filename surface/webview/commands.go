package webview

import (
	"context"
	"strings"
)

// command is one client → server frame type: what it checks of its
// fields and how it runs. Every frame is decoded into one Inbound
// (DecodeInbound), whose common fields (version, id, text, images, limit)
// Inbound.validate checks; a new frame type is one entry in commands.
type command struct {
	// check refuses a frame whose own fields are wrong; nil checks nothing.
	check func(in *Inbound) *FrameError
	// images says whether the frame may carry images; nil: it may not.
	images func(in *Inbound) bool
	// run runs the frame for c. replied says that run answered it (a
	// reply frame of its own); otherwise a frame with an id is acked.
	run func(p *Panel, ctx context.Context, c *conn, in Inbound) (replied bool, err error)
}

// commands are the client → server frames, by type.
var commands = map[string]command{
	TypeNewTask: {
		check:  needText,
		images: func(*Inbound) bool { return true },
		run: func(p *Panel, ctx context.Context, _ *conn, in Inbound) (bool, error) {
			return false, p.agent.Driver.NewTask(ctx, in.Text, in.Images)
		},
	},
	TypeAskResponse: {
		check:  checkAskResponse,
		images: func(in *Inbound) bool { return in.Response == string(ResponseMessage) },
		run: func(p *Panel, ctx context.Context, _ *conn, in Inbound) (bool, error) {
			return false, p.agent.Driver.Respond(ctx, in.TS, Response{Kind: ResponseKind(in.Response), Text: in.Text, Images: in.Images})
		},
	},
	TypeCancelTask: {
		run: func(p *Panel, ctx context.Context, _ *conn, _ Inbound) (bool, error) {
			return false, p.agent.Driver.Cancel(ctx)
		},
	},
	TypeDeleteMessage: {
		check: needTS,
		run: rewinding(func(r Rewinder, ctx context.Context, in Inbound, choice RewindChoice) (RewindReport, error) {
			return r.Rewind(ctx, in.TS, choice)
		}),
	},
	TypeForkSession: {
		check: needTS,
		run: rewinding(func(r Rewinder, ctx context.Context, in Inbound, choice RewindChoice) (RewindReport, error) {
			return r.Fork(ctx, in.TS, choice)
		}),
	},
	TypeEditMessage: {
		check: both(needTS, needText),
		run: rewinding(func(r Rewinder, ctx context.Context, in Inbound, choice RewindChoice) (RewindReport, error) {
			return r.Edit(ctx, in.TS, in.Text, choice)
		}),
	},
	TypeSetPermissionMode: {
		check: needField("a permissionMode", func(in *Inbound) string { return in.PermissionMode }, 64),
		run: func(p *Panel, ctx context.Context, _ *conn, in Inbound) (bool, error) {
			return false, p.agent.Modes.SetPermissionMode(ctx, in.PermissionMode)
		},
	},
	TypeSetAgentMode: {
		check: needField("an agentMode", func(in *Inbound) string { return in.AgentMode }, 64),
		run: func(p *Panel, ctx context.Context, _ *conn, in Inbound) (bool, error) {
			return false, p.agent.Modes.SetAgentMode(ctx, in.AgentMode)
		},
	},
	TypeSetModel: {
		check: needField("a model", func(in *Inbound) string { return in.Model }, 256),
		run: func(p *Panel, ctx context.Context, _ *conn, in Inbound) (bool, error) {
			return false, p.agent.Modes.SetModel(ctx, in.Model)
		},
	},
	TypeListSessions: {
		check: func(in *Inbound) *FrameError {
			if len(in.Search) > maxQuery {
				return badFrame("search longer than %d bytes", maxQuery)
			}
			return nil
		},
		run: (*Panel).listSessions,
	},
	TypeSearchMessages: {
		check: func(in *Inbound) *FrameError {
			if in.Query == "" || len(in.Query) > maxQuery {
				return badFrame("searchMessages needs a query of at most %d bytes", maxQuery)
			}
			return nil
		},
		run: (*Panel).searchMessages,
	},
	TypeLoadSession: {
		check: needField("a sessionId", func(in *Inbound) string { return in.SessionID }, maxIDBytes),
		run: func(p *Panel, ctx context.Context, _ *conn, in Inbound) (bool, error) {
			return false, p.agent.Sessions.LoadSession(ctx, in.SessionID)
		},
	},
	TypeGetState: {
		run: func(p *Panel, _ context.Context, c *conn, _ Inbound) (bool, error) {
			p.hub.stateFor(c)
			return false, nil
		},
	},
	TypeLoadOlder: {
		check: func(in *Inbound) *FrameError {
			if in.TS <= 0 {
				return badFrame("loadOlder needs ts: the oldest message the client has")
			}
			return nil
		},
		run: func(p *Panel, _ context.Context, c *conn, in Inbound) (bool, error) {
			p.hub.olderFor(c, in.ID, in.TS, orInt(in.Limit, 200))
			return true, nil
		},
	},
	TypeGetSettings: {
		run: settingsChange(nil),
	},
	TypeSetKey: {
		check: both(needField("a provider", func(in *Inbound) string { return in.Provider }, 64),
			func(in *Inbound) *FrameError {
				if len(in.Key) > maxKeyBytes {
					return frameErr(CodeTooLarge, "", "key longer than %d bytes: not an API key", maxKeyBytes)
				}
				return nil
			}),
		run: settingsChange(func(s Settings, ctx context.Context, in Inbound) error { return s.SetKey(ctx, in.Provider, in.Key) }),
	},
	TypeSetBaseURL: {
		check: both(needField("a provider", func(in *Inbound) string { return in.Provider }, 64),
			func(in *Inbound) *FrameError {
				if len(in.URL) > maxKeyBytes {
					return frameErr(CodeTooLarge, "", "url longer than %d bytes", maxKeyBytes)
				}
				return nil
			}),
		run: settingsChange(func(s Settings, ctx context.Context, in Inbound) error { return s.SetBaseURL(ctx, in.Provider, in.URL) }),
	},
	TypeSetEffort: {
		check: func(in *Inbound) *FrameError {
			if len(in.Effort) > 32 {
				return badFrame("setEffort needs an effort")
			}
			return nil
		},
		run: settingsChange(func(s Settings, ctx context.Context, in Inbound) error { return s.SetEffort(ctx, in.Effort) }),
	},
	TypeCompleteMention: {
		check: func(in *Inbound) *FrameError {
			if len(in.Prefix) > maxMentionPrefix {
				return badFrame("completeMention's prefix is longer than %d bytes", maxMentionPrefix)
			}
			return nil
		},
		run: func(p *Panel, _ context.Context, c *conn, in Inbound) (bool, error) {
			// The mentionCompletions frame answers it.
			return true, p.runCompleteMention(c, in)
		},
	},
}

// run executes one command for c and answers it: an ack (when the frame
// had an id), a reply frame, or an error frame. in was validated, so its
// type is one of commands.
func (p *Panel) run(ctx context.Context, c *conn, in Inbound) {
	p.log.Debug("web panel command", "client", c.id, "type", in.Type)
	replied, err := commands[in.Type].run(p, ctx, c, in)
	if err != nil {
		p.hub.sendTo(c, errorJSON(frameErr(CodeFailed, in.ID, "%s: %v", in.Type, err)))
		return
	}
	if !replied && in.ID != "" {
		p.hub.sendTo(c, mustJSON(ackFrame{V: ProtocolVersion, Type: "ack", ID: in.ID}))
	}
}

// rewinding is the run of a frame that turns the session back (as the
// frame's rewind choice says: everything when absent), answered with the
// rewindReport frame.
func rewinding(do func(r Rewinder, ctx context.Context, in Inbound, choice RewindChoice) (RewindReport, error)) func(*Panel, context.Context, *conn, Inbound) (bool, error) {
	return func(p *Panel, ctx context.Context, c *conn, in Inbound) (bool, error) {
		choice := RewindChoice{}
		if in.Rewind != nil {
			choice = *in.Rewind
		}
		rep, err := do(p.agent.Rewinder, ctx, in, choice)
		if err != nil {
			return false, err
		}
		p.hub.sendTo(c, mustJSON(rewindReportFrame{V: ProtocolVersion, Type: "rewindReport", ID: in.ID, Report: rep}))
		return true, nil
	}
}

// listSessions answers listSessions with the sessions frame.
func (p *Panel) listSessions(ctx context.Context, c *conn, in Inbound) (bool, error) {
	list, err := p.agent.Sessions.ListSessions(ctx, in.Search, orInt(in.Limit, 50))
	if err != nil {
		return false, err
	}
	if list == nil {
		list = []SessionInfo{}
	}
	p.hub.sendTo(c, mustJSON(sessionsFrame{V: ProtocolVersion, Type: "sessions", ID: in.ID, Search: in.Search, Sessions: list}))
	return true, nil
}

// searchMessages answers searchMessages with the searchResults frame.
func (p *Panel) searchMessages(ctx context.Context, c *conn, in Inbound) (bool, error) {
	hits, err := p.agent.Sessions.SearchMessages(ctx, in.Query, orInt(in.Limit, 20))
	if err != nil {
		return false, err
	}
	if hits == nil {
		hits = []SearchHit{}
	}
	p.hub.sendTo(c, mustJSON(searchFrame{V: ProtocolVersion, Type: "searchResults", ID: in.ID, Query: in.Query, Hits: hits}))
	return true, nil
}

func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// badFrame is a frame refused for its fields.
func badFrame(format string, args ...any) *FrameError {
	return frameErr(CodeBadFrame, "", format, args...)
}

// needTS refuses a frame of in's type without a positive ts.
func needTS(in *Inbound) *FrameError {
	if in.TS <= 0 {
		return badFrame("%s needs a positive ts", in.Type)
	}
	return nil
}

// needText refuses a frame of in's type without text.
func needText(in *Inbound) *FrameError {
	if in.Text == "" {
		return badFrame("%s needs text", in.Type)
	}
	return nil
}

// needField refuses a frame whose field (what names it, as "a model")
// is empty or longer than max bytes.
func needField(what string, field func(in *Inbound) string, max int) func(in *Inbound) *FrameError {
	return func(in *Inbound) *FrameError {
		if v := field(in); v == "" || len(v) > max {
			return badFrame("%s needs %s", in.Type, what)
		}
		return nil
	}
}

// both checks a, then b.
func both(a, b func(in *Inbound) *FrameError) func(in *Inbound) *FrameError {
	return func(in *Inbound) *FrameError {
		if err := a(in); err != nil {
			return err
		}
		return b(in)
	}
}

// checkAskResponse refuses an askResponse without a ts or a known
// response, or a messageResponse without text.
func checkAskResponse(in *Inbound) *FrameError {
	if err := needTS(in); err != nil {
		return err
	}
	switch ResponseKind(in.Response) {
	case ResponseYes, ResponseNo, ResponseAllowAll:
	case ResponseMessage:
		if in.Text == "" {
			return badFrame("a messageResponse needs text")
		}
	case "":
		return badFrame("askResponse needs response")
	default:
		return badFrame("unknown response %q (want yesButtonClicked, noButtonClicked, messageResponse or allowAll)", clip(in.Response, 40))
	}
	return nil
}

// checkImages refuses more images than MaxImages, one too large, or one
// that is not a data:image/ URL.
func checkImages(images []string) *FrameError {
	if len(images) > MaxImages {
		return frameErr(CodeTooLarge, "", "%d images attached, at most %d are taken", len(images), MaxImages)
	}
	for i, u := range images {
		if len(u) > MaxImageURLBytes {
			return frameErr(CodeTooLarge, "", "image %d is larger than 1 MiB", i+1)
		}
		if !strings.HasPrefix(u, "data:image/") {
			return badFrame("image %d is not a data:image/ URL", i+1)
		}
	}
	return nil
}
