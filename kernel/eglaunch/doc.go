// Package eglaunch is Jupyter Enterprise Gateway's remote kernel launcher
// contract, spoken by the kernel itself: what EG's own launchers
// (kernel-launchers/python/scripts/launch_ipykernel.py and its R and Scala
// siblings) do around the kernel they start, so that EG — with its
// Kubernetes, Docker, YARN or distributed process proxies — can start
// agentkernel as a kernel.
//
// EG starts the kernel with a kernel id, a response address, an RSA public
// key and a port range ([SplitArgs] takes them from the command line in
// both of EG's spellings, [FromEnv] from the environment EG gives a kernel
// pod). The kernel then
//
//  1. binds its five ports and a communication port inside the port range,
//     and picks a signing key and the tcp transport itself ([Prepare]); the
//     five stay bound until the kernel server takes them over
//     ([Launch.TakeListeners]), so no other process can take one between;
//  2. once it serves those ports, sends its connection info, with pid,
//     pgid, comm_port and kernel_id added, to the response address
//     ([Launch.Reply]): the JSON is AES-encrypted with a random key, the
//     key RSA-encrypted with EG's public key, both base64 in a versioned
//     JSON payload, itself base64 — the bytes EG's ResponseManager decodes;
//  3. listens on the communication port ([Launch.Listen]) for EG's JSON
//     requests, one per connection: {"signum": n} (0 is EG's liveness
//     poll) and {"shutdown": 1}.
//
// Start with [Prepare]; [Launch.ConnectionInfo] is what the kernel server
// serves, on the listeners of [Launch.TakeListeners]. The package knows
// nothing of what the kernel does with a signal or a shutdown: a [Handler]
// says.
package eglaunch
