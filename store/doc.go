// Package store is agentkernel's session database, in SQLite (embedded,
// the default) or PostgreSQL (Options.URL, for a team): sessions, the two
// histories of every session (UI messages the user sees, API messages the
// model is sent), full-text search, derived titles, previews, archive on
// delete, JSONL export/import and rewinds applied as one transaction.
//
// Start with Open, which creates (or migrates) the SQLite database
// agentkernel.db in the data directory (see DataDir and Options.Dir), or
// the schema in the PostgreSQL database of Options.URL, and call Close
// when done. CreateSession makes a session; AppendUI/AppendAPI
// add completed messages; AppendUI with a partial message followed by
// UpdateUI streams one message with debounced writes; Flush writes pending
// streaming updates now (call it on SIGTERM and before shutdown).
//
// Durability: every method that records a completed message returns only
// after the transaction holding it has committed. The database runs in WAL
// mode with synchronous=NORMAL by default: a commit has written the WAL
// frames to the operating system before it returns, so killing the process
// at any moment (SIGKILL, a panic) loses no completed message and cannot
// corrupt the database. Only a power failure or kernel crash can lose the
// most recent commits; Options.Sync = SyncFull closes that gap at the cost of
// an fsync per commit (about 200 µs on the reference machine, which would
// break the 200 µs append budget). A message still streaming when the process
// dies keeps the text of its last debounced write and stays marked partial.
//
// Ownership: a Store owns two connection pools (one writer connection, several
// read-only connections) and one background goroutine that writes debounced
// streaming updates; Close stops it and waits for it. Rewind logic lives in
// package rewind: the store only persists a rewind's result (ApplyRewind) or
// computes it with package rewind on the stored histories (Rewind).
//
// Files: store.go (Open, Close, connections), options.go, errors.go,
// schema.go (SQLite migrations), postgres.go (PostgreSQL: its schema,
// migrations, integrity check) and pgconn.go (its connections; SQL rebound
// for it), sessions.go (sessions, listing, titles, archive), find.go
// (lookup by id prefix, the latest session of a workspace), classify.go
// (derived kind/role/text columns), append.go and stream.go (writes and
// debounced streaming updates), query.go (paged loads, recent, counts,
// pairs), page.go (paging a UI history from its end, by role), search.go
// (FTS5; tsvector on PostgreSQL), preview.go and summary.go (previews and
// tool summaries), rewind.go and rewrite.go,
// export.go (JSONL), world.go (file blobs, code runs, file changes,
// forks), fileindex.go (the workspace trackers' index), owners.go (who
// owns a session, sharing), rls.go (PostgreSQL's roles and row-level
// security policies) and pginit.go (Init, which an administrator runs).
//
// Sessions belong to their user (owners.go): a SQLite file is private to
// its OS user; on PostgreSQL each user connects as a role of their own and
// row-level security shows them their own sessions and those shared with
// them, read-only. Open refuses a PostgreSQL role that would see more.
package store
