// Package kernel is the Jupyter kernel server: it binds the five sockets of a
// connection file (ROUTER shell, control and stdin; PUB iopub; a ROUTER
// heartbeat that echoes, as ipykernel's), verifies the signature of every
// message, and dispatches requests to a [Handler].
//
// Ports are never probed and released: a port of 0 in the connection file
// is picked as the socket binds (see [Server.ConnectionInfo]), and a
// launcher that picked the ports itself hands its bound listeners over in
// [Config].
//
// Start with [New] and [Server.Serve]. The server owns the protocol rules
// that hold for every kernel: each request is bracketed by status busy/idle
// on iopub; replies go back on the socket the request came in on;
// kernel_info, interrupt and shutdown are answered on the control channel
// while shell is busy; execute requests queued behind an error are aborted
// when stop_on_error is set; input_request goes to the peer whose execute
// request asked. What a request means is the Handler's business.
//
// Shell requests are handled one at a time on one goroutine; control
// requests on another. A message with a bad or missing signature is logged
// and dropped. Malformed or oversized frames are logged and dropped.
package kernel
