// Package backing is about the backing kernel: the real kernel (ipykernel
// by default, any installed kernelspec in general) that runs the code of an
// agentkernel, whether the user's cells in code mode or the agent's.
//
// Find picks the backing kernelspec by name and never picks agentkernel
// itself: its own kernelspecs are passed over (a drop-in installed as
// python3 finds the real python3 behind it), and for python3 with nothing
// else installed it falls back to the Python that has ipykernel, as
// jupyter_client does with its native kernel.
//
// Naming is not enough to stop a chain of kernels (a wrapper script can
// start agentkernel under any name), so every backing kernel is launched
// with Mark in its environment, and a kernel that finds that mark from its
// direct launcher refuses to start a backing kernel (CheckNested).
package backing
