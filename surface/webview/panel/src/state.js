// The panel's mirror of the session: the state the server sends first,
// then changed only by its frames (docs/webview-protocol.md). Which ask is
// pending, and how an ask is answered (its "answer"), are the frames' word
// (surface/webview/asks.go): this module keeps no rule about asks of its own. No
// DOM here: Mirror.apply says what a frame changed, and the page redraws
// that.

/** The state before the first frame. */
export function emptyState() {
  return {
    sessionId: "", title: "", messages: [], older: 0, permissionMode: "", permissionModes: [], agentMode: "", agentModes: [],
    model: "", totals: {}, kernelStatus: "starting", pendingAsk: null, mcpServers: [],
  };
}

/** takes reports whether ask m takes the answer kind (one of its answer's responses). */
export function takes(m, kind) {
  return !!(m && m.answer && Array.isArray(m.answer.responses) && m.answer.responses.indexOf(kind) >= 0);
}

// Mirror.apply returns what a frame changed:
//   {all: true}            the message list was replaced (or reordered)
//   {ts}                   message ts was created or changed
//   {older: true}          older messages were put before those shown
//   {chrome: true}         the header, settings, MCP servers, or status
//   {reply: frame}         a reply to a command (sessions, searchResults,
//                          error, ack, rewindReport): the state is as it was
export class Mirror {
  constructor() {
    this.st = emptyState();
    this.pos = new Map(); // ts → index in st.messages
  }

  /** The message stamped ts, or undefined. */
  message(ts) {
    const i = this.pos.get(ts);
    return i === undefined ? undefined : this.st.messages[i];
  }

  /** The index of the message stamped ts, or undefined. */
  index(ts) {
    return this.pos.get(ts);
  }

  /** The transport went away: nothing is known to run. */
  disconnected() {
    this.st.kernelStatus = "disconnected";
  }

  reindex() {
    this.pos.clear();
    this.st.messages.forEach((m, i) => this.pos.set(m.ts, i));
  }

  // pending follows a message frame's word on the pending ask.
  pending(m, isPending) {
    if (isPending) this.st.pendingAsk = m;
    else if (this.st.pendingAsk && this.st.pendingAsk.ts === m.ts) this.st.pendingAsk = null;
  }

  apply(f) {
    const st = this.st;
    switch (f.type) {
      case "state":
        this.st = Object.assign(emptyState(), f.state);
        this.st.messages = this.st.messages || [];
        this.reindex();
        return { all: true };
      case "messageCreated": {
        const m = f.message;
        const i = this.pos.get(m.ts);
        this.pending(m, f.pending);
        if (i !== undefined) {
          st.messages[i] = m;
          return { ts: m.ts };
        }
        st.messages.push(m);
        const n = st.messages.length;
        if (n > 1 && st.messages[n - 2].ts > m.ts) {
          st.messages.sort((a, b) => a.ts - b.ts);
          this.reindex();
          return { all: true };
        }
        this.pos.set(m.ts, n - 1);
        return { ts: m.ts };
      }
      case "messageUpdated": {
        const ts = f.message ? f.message.ts : f.ts;
        const i = this.pos.get(ts);
        if (i === undefined) return {}; // of a message a rewind removed
        if (f.message) {
          st.messages[i] = f.message;
          this.pending(f.message, f.pending);
        } else {
          // Streaming: text appended; never an ask.
          const m = st.messages[i];
          if (f.append) m.text = (m.text || "") + f.append;
          if (f.appendReasoning) m.reasoning = (m.reasoning || "") + f.appendReasoning;
          if (f.partial) m.partial = true;
          else delete m.partial;
        }
        return { ts };
      }
      case "messagesRewound":
        st.messages = f.messages || [];
        st.older = f.older || 0;
        st.pendingAsk = f.pendingAsk || null;
        this.reindex();
        return { all: true };
      case "olderMessages": {
        // A page of older messages, before those shown.
        const have = new Set(st.messages.map((m) => m.ts));
        st.messages = (f.messages || []).filter((m) => !have.has(m.ts)).concat(st.messages);
        st.older = f.older || 0;
        this.reindex();
        return { older: true };
      }
      case "kernelStatus":
        st.kernelStatus = f.status;
        return { chrome: true };
      case "tokenUsage": {
        // The context's fill is known after a request; keep the last one.
        const t = Object.assign({}, f.totals);
        if (!t.contextUsed && st.totals) {
          t.contextUsed = st.totals.contextUsed;
          t.contextWindow = st.totals.contextWindow;
        }
        st.totals = t;
        return { chrome: true };
      }
      case "settings":
        st.permissionMode = f.permissionMode;
        st.model = f.model;
        if (f.agentMode) st.agentMode = f.agentMode;
        if (f.title) st.title = f.title;
        return { chrome: true };
      case "mcpServers":
        st.mcpServers = f.servers || [];
        return { chrome: true };
      default:
        return { reply: f };
    }
  }
}
