// How frames travel between this page and the kernel. Two transports, one
// page: the panel's own WebSocket (the standalone page, served by
// surface/webview/server.go), or the page that holds this one in a sandboxed
// iframe (the JupyterLab sidebar, labextension/src/index.ts), which relays
// them over a Jupyter comm. Each calls the same handlers and offers send.

/** The protocol version of the frames (webview.ProtocolVersion). */
export const PROTOCOL = 3;

/**
 * decode takes one message of the server's — a frame, or a batch (a JSON
 * array of frames) — and returns its frames; null when one speaks another
 * version of the protocol. A message that is not JSON gives no frames.
 */
export function decode(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch (e) {
    return [];
  }
  const frames = Array.isArray(data) ? data : [data];
  for (const f of frames) if (!f || f.v !== PROTOCOL) return null;
  return frames;
}

// Handlers of a transport:
//   open()                 connected: frames come, send works
//   closed(reason)         disconnected (a text for people); the socket
//                          reconnects by itself, the sidebar when its host
//                          opens the comm again
//   message(text)          one message of the server's (decode it)
//   theme(theme)           the sidebar's host gives its theme
//   settings()             the sidebar's host asks for the settings view
//                          (a cell's "Open Settings")

/**
 * The standalone page's transport: the panel's WebSocket, with the page's
 * token, reconnecting with backoff (up to 10 s).
 */
export function socketTransport(token, h) {
  let ws = null;
  let retry = 0;
  const connect = () => {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(proto + "//" + location.host + "/ws?token=" + encodeURIComponent(token));
    ws.onopen = () => {
      retry = 0;
      h.open();
    };
    ws.onmessage = (ev) => h.message(ev.data);
    ws.onclose = (ev) => {
      let why = ev.reason ? " (" + ev.reason + ")" : "";
      if (ev.code === 1008 && !ev.reason) why = " (refused: check the URL's token)";
      h.closed("Disconnected" + why + "; reconnecting…");
      setTimeout(connect, Math.min(10000, 250 * Math.pow(2, retry++)));
    };
  };
  connect();
  return {
    send(text) {
      if (!ws || ws.readyState !== WebSocket.OPEN) return false;
      ws.send(text);
      return true;
    },
  };
}

/**
 * The sidebar's transport: the host page opens the comm and relays. It
 * posts {akStatus: "open" | "closed", reason}, {akFrames: TEXT},
 * {akTheme: THEME} and {akShow: "settings"}; this page posts {akReady: true}, then {akFrame: TEXT}.
 * Only messages from the parent window count.
 */
export function parentTransport(h) {
  let open = false;
  window.addEventListener("message", (ev) => {
    const d = ev.data;
    if (ev.source !== window.parent || !d || typeof d !== "object") return;
    if (d.akTheme && typeof d.akTheme === "object") h.theme(d.akTheme);
    if (d.akStatus === "open") {
      open = true;
      h.open();
    }
    if (d.akStatus === "closed") {
      open = false;
      h.closed(d.reason || "No agent kernel: open a notebook on an Agent kernel.");
    }
    if (typeof d.akFrames === "string") h.message(d.akFrames);
    if (d.akShow === "settings") h.settings();
  });
  window.parent.postMessage({ akReady: true }, "*");
  return {
    send(text) {
      if (!open) return false;
      window.parent.postMessage({ akFrame: text }, "*");
      return true;
    },
  };
}
