// Package bridge joins the two worlds: it implements kernel.Handler for the
// agentkernel kernel and drives a backing kernel (ipykernel by default)
// through kernel/client.
//
// In code mode (this package's first mode) the bridge is a transparent
// proxy: execute, complete, inspect, is_complete, history, comm_info and the
// comm messages go to the backing kernel with the frontend's msg_id, and
// everything the backing kernel publishes for them is republished with the
// frontend's request as parent, content, metadata and buffers unchanged.
// The backing kernel's own busy/idle are dropped: the server brackets each
// request itself. input_request from the backing kernel becomes an
// input_request to the frontend that sent the cell.
//
// The backing kernel starts in the background when the bridge starts, so
// kernel_info answers at once (its language_info comes from a cache of the
// backing kernel's last answer). If the backing kernel dies, the running
// request gets an error and the next one starts a fresh backing kernel.
//
// Start with New, then Start; Close shuts the backing kernel down.
package bridge
