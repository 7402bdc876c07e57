// Package webview is agentkernel's web panel: an HTTP and WebSocket server
// that mirrors one agent session live to any number of browser clients and
// takes commands back from them.
//
// Where to start: [Start] binds the server (127.0.0.1 and an ephemeral port
// by default) around an [Agent], the small interfaces a surface composes
// (a mirror, a driver, a rewinder, …), which webview/hostagent implements
// over the session host. [Server.URL] is the panel's address,
// token included; [Server.Close] stops it and removes its runtime file;
// [ListRunning] lists the panels of running kernels from those files.
//
// The protocol (docs/webview-protocol.md, [ProtocolVersion]) follows
// Roo-Code's webview: a client gets the full state when it connects, then
// every change as a frame (messageCreated, messageUpdated — streaming text
// as appended pieces —, messagesRewound, kernelStatus, …); it sends commands
// back (newTask, askResponse, cancelTask, deleteMessage, editMessage, …).
// How each ask is answered, and which one is pending, the frames say
// (asks.go, the one table): the page mirrors no rule of the agent's.
//
// The page: static/ (embedded) holds index.html, panel.css and panel.js,
// the bundle of the ES modules in surface/webview/panel/src (build.mjs, esbuild),
// committed so that go build needs no node; static_test.go checks that
// the bundle was built from the sources as they are.
//
// Ownership: the server keeps a mirror of the session's state, updated from
// the Mirror's events under one lock, and fans every change out to the
// clients' bounded send buffers without blocking; a client whose buffer is
// full is dropped and resyncs with full state when it reconnects. So the
// agent is never slowed by a client, and every client sees the same frames
// in the same order. Each connection has a reader and a writer goroutine,
// owned by the HTTP handler that accepted it; the server owns one resync
// goroutine. Close stops them all and waits.
//
// Security: the token (random per server) is required for the page and
// the socket and compared in constant time; the socket checks Origin
// (same origin as the page, or Options.OriginPatterns) and, on loopback,
// the Host header; model text is rendered by the panel's own markdown
// renderer, which builds DOM nodes from a fixed set of tags and never
// parses HTML. Nothing the Agent returns beyond the types here is sent:
// no configuration, environment or API key.
package webview
