package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// PermissionMode is a permission mode: how much the agent may do without asking.
type PermissionMode string

// The permission modes. In every mode, read-only tools are allowed and the
// hard refusals (protected paths, paths outside the workspace, dangerous
// code) hold.
const (
	// PermissionDefault asks before every tool that is not read-only, unless an
	// allow rule or the session's allow-all set covers it.
	PermissionDefault PermissionMode = "default"
	// PermissionAcceptEdits also allows write_file and edit_file (inside the
	// workspace) without asking; execute_code is still asked.
	PermissionAcceptEdits PermissionMode = "acceptEdits"
	// PermissionBypass allows everything but the hard refusals and the
	// deny rules.
	PermissionBypass PermissionMode = "bypassPermissions"
	// PermissionPlan is read-only: every tool that is not read-only is denied.
	PermissionPlan PermissionMode = "plan"
)

// Modes lists the modes.
var Modes = []PermissionMode{PermissionDefault, PermissionAcceptEdits, PermissionBypass, PermissionPlan}

// ParsePermissionMode parses a mode name, ignoring case, "-" and "_" ("accept-edits",
// "BYPASS_PERMISSIONS"); "bypass" and "readonly"/"read-only" are accepted
// for bypassPermissions and plan.
func ParsePermissionMode(s string) (PermissionMode, error) {
	k := strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(strings.TrimSpace(s)))
	switch k {
	case "default", "":
		return PermissionDefault, nil
	case "acceptedits":
		return PermissionAcceptEdits, nil
	case "bypasspermissions", "bypass":
		return PermissionBypass, nil
	case "plan", "readonly":
		return PermissionPlan, nil
	}
	return "", fmt.Errorf("agent: unknown permission mode %q (want default, acceptEdits, bypassPermissions or plan)", s)
}

// Verdict is what a Decision says to do with a tool call.
type Verdict int

// The verdicts.
const (
	// Allow: run the tool.
	Allow Verdict = iota + 1
	// Deny: do not run it; send Reason to the model as an error result.
	Deny
	// Ask: ask the user, then apply the answer with [Policy.Answer].
	Ask
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Ask:
		return "ask"
	default:
		return "unknown"
	}
}

// Decision is the policy's verdict on one tool call.
type Decision struct {
	Verdict Verdict
	// Reason says why, for the user and (on Deny) for the model.
	Reason string
	// Hard marks a hard refusal (protected path, outside the workspace,
	// dangerous code): no mode, rule or answer overrides it.
	Hard bool
	// Rule is the configured allow or deny rule that decided, if one did.
	Rule string
	// Routine marks an allow that needs no one: a read-only tool.
	Routine bool
	// Diff shows what the call would change (a notebook cell's lines), for
	// the ask.
	Diff string
	// ext is the external tool decided on, if the call is one: its ask is
	// use_mcp_server.
	ext *SourceTool
}

// Answer is the user's answer to an Ask.
type Answer string

// The answers.
const (
	AnswerAllow    Answer = "allow"    // this call
	AnswerAllowAll Answer = "allowAll" // this tool, for the rest of the session
	AnswerDeny     Answer = "deny"
)

// ParseAnswer parses an answer as typed at a prompt: y/yes/allow, a/all/
// always/allowAll, n/no/deny (ignoring case and surrounding space).
func ParseAnswer(s string) (Answer, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "y", "yes", "allow":
		return AnswerAllow, nil
	case "a", "all", "always", "allowall", "allow all", "allow-all":
		return AnswerAllowAll, nil
	case "n", "no", "deny":
		return AnswerDeny, nil
	}
	return "", fmt.Errorf("agent: unknown answer %q (want y, a or n)", s)
}

// AllowPrompt ends the text of an approval asked as a line of text (a
// notebook's stdin, a terminal); ParseReply reads the answer.
const AllowPrompt = "Allow? [y]es / [a]lways / [n]o: "

// AskQuestion is what an ask asks, for a person, without the answer line
// (AskPrompt adds it): the code to run, the MCP tool and its arguments,
// the tool and its input, or the followup question with its numbered
// suggestions.
func AskQuestion(ask messages.UIMessage) string {
	switch ask.Ask {
	case messages.AskCommand:
		if ask.Cell != "" {
			return "The agent wants to run cell " + ask.Cell + " of the notebook:\n\n" + ask.Text + "\n"
		}
		return "The agent wants to run this code:\n\n" + ask.Text + "\n"
	case messages.AskUseMCPServer:
		if a, ok := ParseMCPAsk(ask); ok {
			return fmt.Sprintf("The agent wants to use the tool %s of the MCP server %s with %s", a.ToolName, a.ServerName, a.Arguments)
		}
		return ask.Text
	case messages.AskFollowup:
		q, _ := messages.ParseFollowup(ask)
		p := q.Question
		for i, s := range q.Suggest {
			p += fmt.Sprintf("\n  %d. %s", i+1, s)
		}
		return p
	case messages.AskTool:
		if t, ok := messages.ParseToolAsk(ask); ok {
			if t.Diff != "" {
				return fmt.Sprintf("The agent wants to change the notebook (%s):\n\n%s", t.Tool, strings.TrimRight(t.Diff, "\n"))
			}
			return fmt.Sprintf("The agent wants to use %s with %s", t.Tool, t.Input)
		}
	}
	return ask.Text
}

// AskPrompt is the whole line of text an ask is put to a person with:
// AskQuestion, then AllowPrompt, or "> " for a followup's answer.
func AskPrompt(ask messages.UIMessage) string {
	if ask.Ask == messages.AskFollowup {
		return AskQuestion(ask) + "\n> "
	}
	return AskQuestion(ask) + "\n" + AllowPrompt
}

// ParseReply turns text typed at an approval prompt into the Response
// that answers the ask, decided by by: y, a and n as ParseAnswer reads
// them; any other words are a denial that the model gets to read. ok is
// false for blank input: ask again.
func ParseReply(in, by string) (r Response, ok bool) {
	switch a, err := ParseAnswer(in); {
	case err == nil && a == AnswerAllow:
		return Response{Kind: ResponseYes, By: by}, true
	case err == nil && a == AnswerAllowAll:
		return Response{Kind: ResponseAllowAll, By: by}, true
	case err == nil:
		return Response{Kind: ResponseNo, By: by}, true
	case strings.TrimSpace(in) != "":
		return Response{Kind: ResponseMessage, Text: in, By: by}, true
	}
	return Response{}, false
}

// Rule is a configured allow or deny rule. The syntax:
//
//	TOOL          every call of the tool ("read_file"); "*" is every tool
//	TOOL(SPEC)    the calls whose subject matches SPEC
//
// For the file tools (read_file, list_files, search_files, write_file,
// edit_file) SPEC is a glob on the workspace-relative path, with "/" as the
// separator: "*" matches within one path element, "?" one character, "**"
// any number of elements ("notebooks/**" is notebooks and everything
// below it; "**/*.csv" any CSV file). A path that leads through a symlink is
// matched both as written and as resolved: an allow rule must match both, a
// deny rule either.
//
// For execute_code, propose_cell and notebook_run_cell (the cell's code)
// SPEC is a pattern on the code, matched line by line after collapsing
// runs of white space; blank lines and "#"
// comments are ignored, and a leading IPython "!" or "%" may be left out
// ("pip install *" matches "%pip install numpy" and "!pip install numpy").
// "*" is the only wildcard. An allow rule matches when every line matches,
// and its "*" does not match any of ; & | ` $ < > so an allowed command
// cannot be chained to another one. A deny rule matches when any line
// matches, and its "*" matches anything. A rule on execute_code also
// holds for notebook_run_cell, which runs a cell's code the same way.
//
// Other tools take no SPEC. The tools of MCP servers are named
// mcp__SERVER__TOOL; a rule "mcp__SERVER" covers every tool of the server,
// and "*" in an MCP rule matches any run of characters ("mcp__github__*",
// "mcp__*__read_*"). Deny rules beat allow rules, and the hard refusals
// beat both.
type Rule struct {
	Tool string // tool name or "*"
	Spec string // "" when the rule has none
	raw  string
}

// ParseRule parses a rule (see [Rule]).
func ParseRule(s string) (Rule, error) {
	raw := strings.TrimSpace(s)
	tool, spec := raw, ""
	if i := strings.IndexByte(raw, '('); i >= 0 {
		if !strings.HasSuffix(raw, ")") {
			return Rule{}, fmt.Errorf("agent: rule %q: missing closing parenthesis", s)
		}
		tool, spec = strings.TrimSpace(raw[:i]), strings.TrimSpace(raw[i+1:len(raw)-1])
		if spec == "" {
			return Rule{}, fmt.Errorf("agent: rule %q: empty pattern in parentheses", s)
		}
	}
	if tool == "" {
		return Rule{}, fmt.Errorf("agent: rule %q: no tool name", s)
	}
	if tool != "*" && !toolNameRE.MatchString(tool) && !(IsExternal(tool) && externalNameRE.MatchString(tool)) {
		return Rule{}, fmt.Errorf("agent: rule %q: bad tool name %q", s, tool)
	}
	return Rule{Tool: tool, Spec: spec, raw: raw}, nil
}

func (r Rule) String() string { return r.raw }

var toolNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// compiledRule is a Rule checked against the toolbox.
type compiledRule struct {
	Rule
	re   *regexp.Regexp // nil: matches every call of the tool
	name *regexp.Regexp // an MCP rule: matches the tool names it covers
}

func (tb *Toolbox) compileRule(s string, allow bool) (compiledRule, error) {
	r, err := ParseRule(s)
	if err != nil {
		return compiledRule{}, err
	}
	cr := compiledRule{Rule: r}
	if IsExternal(r.Tool) {
		if r.Spec != "" {
			return compiledRule{}, fmt.Errorf("agent: rule %q: MCP tools take no pattern", s)
		}
		re, err := externalRule(r.Tool)
		if err != nil {
			return compiledRule{}, fmt.Errorf("agent: rule %q: %w", s, err)
		}
		cr.name = re
		return cr, nil
	}
	if r.Tool != "*" {
		t, ok := tb.Lookup(r.Tool)
		if !ok {
			return compiledRule{}, fmt.Errorf("agent: rule %q: unknown tool %q", s, r.Tool)
		}
		if r.Spec != "" && t.subject == "" {
			return compiledRule{}, fmt.Errorf("agent: rule %q: %s takes no pattern", s, r.Tool)
		}
	}
	if r.Spec == "" {
		return cr, nil
	}
	if r.Tool == "*" {
		return compiledRule{}, fmt.Errorf("agent: rule %q: \"*\" takes no pattern", s)
	}
	if t, _ := tb.Lookup(r.Tool); t.subject == "code" {
		cr.re = codePattern(r.Spec, allow)
	} else {
		cr.re = globPattern(r.Spec)
	}
	return cr, nil
}

// globPattern compiles a path glob (see [Rule]) to an anchored regexp.
func globPattern(glob string) *regexp.Regexp {
	g := strings.TrimPrefix(filepath.ToSlash(glob), "./")
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(g[i:], "/**") && i+3 == len(g):
			b.WriteString("(?:/.*)?")
			i += 2
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(".*")
			i++
		case g[i] == '*':
			b.WriteString("[^/]*")
		case g[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// codePattern compiles a code pattern (see [Rule]) to an anchored regexp.
func codePattern(spec string, allow bool) *regexp.Regexp {
	star := ".*"
	if allow {
		star = "[^;&|`$<>\n]*"
	}
	parts := strings.Split(strings.Join(strings.Fields(spec), " "), "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, star) + "$")
}

// matchCode reports whether the rule's pattern matches code: every line
// (all) or any line.
func matchCode(re *regexp.Regexp, code string, all bool) bool {
	seen := false
	for _, line := range strings.Split(code, "\n") {
		l := strings.Join(strings.Fields(line), " ")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		seen = true
		bare := strings.TrimSpace(strings.TrimLeft(l, "!%"))
		m := re.MatchString(l) || re.MatchString(bare)
		if m && !all {
			return true
		}
		if !m && all {
			return false
		}
	}
	return all && seen
}

// PolicyOptions configures a Policy. The zero value is the default mode
// with no rules.
type PolicyOptions struct {
	// Mode is the initial mode. Default ModeDefault.
	Mode PermissionMode
	// Allow and Deny are rules in the syntax of [Rule].
	Allow []string
	Deny  []string
}

// Policy decides whether tool calls run. It holds the mode, the rules and
// the session's allow-all set. All methods are safe for concurrent use (the
// task loop decides while the web panel or a magic changes the mode).
type Policy struct {
	tb    *Toolbox
	allow []compiledRule
	deny  []compiledRule

	mu       sync.Mutex
	mode     PermissionMode
	allowAll map[string]bool
}

// NewPolicy returns a policy for the tools of tb. It fails on an unknown
// mode and on a rule that does not parse or names an unknown tool.
func NewPolicy(tb *Toolbox, opts PolicyOptions) (*Policy, error) {
	if tb == nil {
		return nil, errors.New("agent: policy: no toolbox")
	}
	mode := opts.Mode
	if mode == "" {
		mode = PermissionDefault
	}
	if !slices.Contains(Modes, mode) {
		return nil, fmt.Errorf("agent: policy: unknown mode %q", mode)
	}
	p := &Policy{tb: tb, mode: mode, allowAll: map[string]bool{}}
	for _, s := range opts.Allow {
		r, err := tb.compileRule(s, true)
		if err != nil {
			return nil, fmt.Errorf("agent: policy: allow %w", err)
		}
		p.allow = append(p.allow, r)
	}
	for _, s := range opts.Deny {
		r, err := tb.compileRule(s, false)
		if err != nil {
			return nil, fmt.Errorf("agent: policy: deny %w", err)
		}
		p.deny = append(p.deny, r)
	}
	return p, nil
}

// PermissionMode returns the current mode.
func (p *Policy) PermissionMode() PermissionMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetPermissionMode changes the mode.
func (p *Policy) SetPermissionMode(m PermissionMode) error {
	if !slices.Contains(Modes, m) {
		return fmt.Errorf("agent: unknown permission mode %q", m)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	return nil
}

// AllowedAll returns the tools the user allowed for the rest of the
// session, sorted.
func (p *Policy) AllowedAll() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.allowAll))
	for t := range p.allowAll {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// ResetSession forgets the allow-all answers (a new session starts).
func (p *Policy) ResetSession() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.allowAll)
}

// Decide returns the verdict on call. In order:
//
//  1. an unknown tool or input that does not match the tool's schema is
//     denied;
//  2. hard refusals, in every mode: a file path outside the workspace
//     (through "..", an absolute path or a symlink) or protected (see
//     protect.Path, also when reached through a symlink), and dangerous
//     code in execute_code, propose_cell or notebook_run_cell (see
//     [DangerousCode]; a run's call carries its cell's code, which
//     Task's check puts in it);
//  3. a matching deny rule denies;
//  4. read-only tools are allowed;
//  5. in plan mode, everything else is denied;
//  6. a tool in the session's allow-all set is allowed;
//  7. a matching allow rule allows, and so does an MCP server's alwaysAllow
//     list for its tools;
//  8. bypassPermissions allows; acceptEdits allows write_file, edit_file and
//     the notebook's edits; inserting and moving notebook cells are allowed
//     (changing or deleting a cell asks, unless the agent wrote it: see
//     runTool's review);
//  9. otherwise: Ask.
func (p *Policy) Decide(call provider.ToolCall) Decision {
	t, ok := p.tb.Lookup(call.Name)
	if !ok {
		return Decision{Verdict: Deny, Reason: fmt.Sprintf("unknown tool %q", call.Name)}
	}
	in, err := t.Validate(call.Input)
	if err != nil {
		return Decision{Verdict: Deny, Reason: err.Error()}
	}
	c := &subjectCall{t: t, subject: t.subjectOf(in)}
	// 2. Hard refusals.
	if d, refused := p.refuse(c, in); refused {
		return d
	}
	// 3. Deny rules.
	for _, r := range p.deny {
		if c.matches(r, false) {
			return Decision{Verdict: Deny, Rule: r.raw, Reason: fmt.Sprintf("denied by the rule %q", r.raw)}
		}
	}
	// 4. Read-only tools.
	if t.ReadOnly() {
		return Decision{Verdict: Allow, Reason: "read-only tool", Routine: true}
	}
	p.mu.Lock()
	mode, all := p.mode, p.allowAll[t.name]
	p.mu.Unlock()
	// 5. Plan mode.
	if mode == PermissionPlan {
		return Decision{Verdict: Deny, Reason: fmt.Sprintf("plan mode is read-only: %s is not allowed", t.name)}
	}
	// 6. Allow-all.
	if all {
		return Decision{Verdict: Allow, Reason: fmt.Sprintf("%s allowed for this session by the user", t.name)}
	}
	// 7. Allow rules.
	for _, r := range p.allow {
		if c.matches(r, true) {
			return Decision{Verdict: Allow, Rule: r.raw, Reason: fmt.Sprintf("allowed by the rule %q", r.raw)}
		}
	}
	if t.external != nil && t.external.AlwaysAllow {
		return Decision{Verdict: Allow, Reason: fmt.Sprintf("in the alwaysAllow list of the MCP server %q", t.external.Server)}
	}
	// 8 and 9.
	return byMode(t, mode)
}

// subjectCall is a call as the rules see it: its tool and its subject
// (the path or the code), and for a file tool the path relative to the
// workspace as written (lex) and as resolved through symlinks (real).
type subjectCall struct {
	t                  *Tool
	subject, lex, real string
}

// refuse is step 2 of Decide: the hard refusals, in every mode. It also
// fills in a file tool's workspace-relative paths.
func (p *Policy) refuse(c *subjectCall, in map[string]any) (Decision, bool) {
	t := c.t
	switch t.subject {
	case "path":
		abs, err := p.tb.ws.Resolve(c.subject)
		if err != nil {
			return Decision{Verdict: Deny, Hard: true, Reason: err.Error()}, true
		}
		c.real, c.lex = p.tb.ws.Rel(abs), p.tb.ws.lexicalRel(c.subject, abs)
		if why := protectedEither(c.lex, c.real); why != "" {
			return Decision{Verdict: Deny, Hard: true,
				Reason: fmt.Sprintf("path %q is protected (%s)", c.subject, why)}, true
		}
	case "code":
		if _, read := in[t.subject]; t.check != nil && !read {
			// A run's code is the cell's, read by the check: a call
			// that was not checked has none to screen.
			return Decision{Verdict: Deny, Hard: true, Reason: t.name + ": the cell's code was not read (the call was not checked)"}, true
		}
		if why := DangerousCode(c.subject); why != "" {
			return Decision{Verdict: Deny, Hard: true, Reason: "dangerous code refused: " + why}, true
		}
	}
	return Decision{}, false
}

// matches reports whether the rule r applies to the call. A path pattern
// of an allow rule must match both the path as written and as resolved,
// that of a deny rule either.
func (c *subjectCall) matches(r compiledRule, allow bool) bool {
	t := c.t
	if r.name != nil {
		return r.name.MatchString(t.name)
	}
	if !r.covers(t.name) {
		return false
	}
	if r.re == nil {
		return true
	}
	if t.subject == "code" {
		return matchCode(r.re, c.subject, allow)
	}
	ml, mr := r.re.MatchString(c.lex), r.re.MatchString(c.real)
	if allow {
		return ml && mr
	}
	return ml || mr
}

// byMode is steps 8 and 9 of Decide: what the permission mode allows of
// a call no rule decided, else Ask.
func byMode(t *Tool, mode PermissionMode) Decision {
	switch {
	case mode == PermissionBypass:
		return Decision{Verdict: Allow, Reason: "bypassPermissions mode"}
	case mode == PermissionAcceptEdits && t.class == ClassEdit:
		return Decision{Verdict: Allow, Reason: "acceptEdits mode: edits inside the workspace are allowed"}
	case mode == PermissionAcceptEdits && t.class == ClassNotebook:
		return Decision{Verdict: Allow, Reason: "acceptEdits mode: edits of the notebook are allowed"}
	case t.name == ToolNotebookInsert || t.name == ToolNotebookMove:
		return Decision{Verdict: Allow, Reason: "a new cell, or a cell moved, changes no cell of the user's"}
	}
	return Decision{Verdict: Ask, Reason: fmt.Sprintf("%s needs approval in %s mode", t.name, mode), ext: t.external}
}

// covers reports whether the rule is about the tool called name: its own,
// every tool ("*"), or a run of a notebook cell for an execute_code rule.
func (r compiledRule) covers(name string) bool {
	return r.Tool == "*" || r.Tool == name || r.Tool == ToolExecuteCode && name == ToolNotebookRun
}

// Answer applies the user's answer to a call that Decide asked about and
// returns the final decision (Allow or Deny). AnswerAllowAll also adds the
// tool to the session's allow-all set. The call is decided again first, so
// an answer never overrides a refusal that applies now (say, the mode was
// switched to plan while the question was open).
func (p *Policy) Answer(call provider.ToolCall, a Answer) Decision {
	d := p.Decide(call)
	if d.Verdict == Deny {
		return d
	}
	switch a {
	case AnswerAllow:
		return Decision{Verdict: Allow, Reason: "allowed by the user"}
	case AnswerAllowAll:
		p.mu.Lock()
		p.allowAll[call.Name] = true
		p.mu.Unlock()
		return Decision{Verdict: Allow, Reason: fmt.Sprintf("%s allowed for this session by the user", call.Name)}
	default:
		return Decision{Verdict: Deny, Reason: "denied by the user"}
	}
}

// DecisionMessage turns a decision on call into the UI message that records
// it, so that every decision is in the UI history: an Ask becomes ask
// "command" (execute_code, and notebook_run_cell with Cell its cell; Text
// is the code) or ask "tool" (Text is JSON
// {"tool", "input", "reason"}); an Allow becomes say "text" and a Deny say
// "error", each naming the call and the reason. ts is the message's
// timestamp (from the session's messages.Clock).
func DecisionMessage(ts int64, call provider.ToolCall, d Decision) messages.UIMessage {
	m := messages.UIMessage{TS: ts}
	switch d.Verdict {
	case Ask:
		m.Type = messages.TypeAsk
		if d.ext != nil {
			m.Ask = messages.AskUseMCPServer
			m.Text = mcpAskText(d.ext, call)
			return m
		}
		if call.Name == ToolExecuteCode || call.Name == ToolNotebookRun {
			m.Ask = messages.AskCommand
			var in struct {
				Code string `json:"code"`
				ID   string `json:"id"`
			}
			_ = json.Unmarshal(call.Input, &in)
			m.Text, m.Cell = in.Code, in.ID
			return m
		}
		m.Ask = messages.AskTool
		input := call.Input
		if !json.Valid(input) {
			input = json.RawMessage("null")
		}
		b, _ := json.Marshal(messages.ToolAsk{Tool: call.Name, Input: input, Reason: d.Reason, Diff: d.Diff})
		m.Text = string(b)
	case Allow:
		m.Type, m.Say = messages.TypeSay, messages.SayText
		m.Text = fmt.Sprintf("Allowed %s: %s.", describeCall(call), d.Reason)
		m.Decision = &messages.Decision{Tool: call.Name, Allowed: true, Routine: d.Routine}
	default:
		m.Type, m.Say = messages.TypeSay, messages.SayError
		m.Text = fmt.Sprintf("Denied %s: %s.", describeCall(call), d.Reason)
		m.Decision = &messages.Decision{Tool: call.Name}
	}
	return m
}

// describeCall names a call briefly: "read_file(notes.md)",
// "execute_code(print(1) …)", "`mcp__github__get_issue`".
func describeCall(call provider.ToolCall) string {
	if IsExternal(call.Name) {
		// in code: the text is shown as markdown, where __ is emphasis
		return "`" + call.Name + "`"
	}
	var in map[string]any
	_ = json.Unmarshal(call.Input, &in)
	for _, k := range []string{"path", "code"} {
		s, ok := in[k].(string)
		if !ok {
			continue
		}
		first, _, more := strings.Cut(strings.TrimSpace(s), "\n")
		first = truncateRunes(first, 80)
		if more {
			first += " …"
		}
		return fmt.Sprintf("%s(%s)", call.Name, first)
	}
	return call.Name
}
