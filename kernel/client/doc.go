// Package client is the Jupyter kernel client: what jupyter_client is in
// Python. It finds kernelspecs, launches a kernel with a fresh connection
// file, talks to it over ZeroMQ, interrupts, restarts and shuts it down, and
// notices when it dies.
//
// Start with [FindSpec] and [Start]: Start launches the kernel in its own
// process group and returns a [Kernel] once the kernel has answered
// kernel_info and its iopub channel is live. An ipykernel is given ipc
// sockets in a private directory, other kernels free tcp ports on loopback
// ([Options].Transport); while a kernel starts, Start watches its ports and
// starts it again, with fresh ones, when it cannot bind them ([ErrBind]). [Kernel.Client] returns the
// [Client] that talks to it; [Dial] returns a Client for a kernel someone
// else launched. [Client.Do] sends one request and returns its reply after
// the kernel has gone idle for it, streaming that request's iopub messages
// and stdin requests to [Handlers] on the caller's goroutine.
//
// Ownership: a Client owns its five sockets and one receiving goroutine per
// socket (plus two for the heartbeat); Close stops and waits for all of them.
// A Kernel owns its Client, the process and the goroutine that waits for it;
// Shutdown releases all of it. When the kernel dies, pending and later
// requests fail with an error wrapping [ErrDead] instead of hanging.
package client
