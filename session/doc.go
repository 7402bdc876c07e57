// Package session is the session host: the one owner of an agent
// session's lifecycle for every surface that drives one — the notebook
// (package bridge maps Jupyter messages onto it), the web panel (which
// calls the same typed methods), and the headless commands (ask, run).
//
// A Host holds the current session of one surface: New makes one, and
// NewSession, Resume and Continue switch it. The model is resolved in one
// order everywhere — SetModel, then the resumed session's, then
// Config.Model — and each model string is opened once per host. Submit
// sends a prompt and follows the turn to its end, answering asks through
// the Turn's Approver (the notebook's stdin, a policy, a terminal); the
// agent's code runs in the Config.Runner with its outputs going to the
// Turn's Output. Subscribe follows whichever session is current.
package session
