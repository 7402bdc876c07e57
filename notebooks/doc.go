// Package notebooks reads and writes Jupyter notebooks (nbformat v4, minor
// versions 0 to 5), exports an agent session as a notebook, and changes a
// notebook file's cells by id. Its subpackage runner runs notebooks
// headlessly through any kernel, as nbclient does.
//
// Where to start:
//   - [ReadFile] and [Parse] decode a notebook into a [Notebook]:
//     cells, outputs and mime bundles are typed, everything else (unknown
//     metadata, unknown fields) is kept as raw JSON so a round trip keeps
//     it. A malformed notebook gives an error naming the cell and the field
//     (a *[FormatError]), never a panic.
//   - [WriteFile], [Write] and [Marshal] encode a notebook byte for byte as
//     Jupyter's nbformat does (one-space indent, sorted keys, multiline
//     strings as lists of lines, trailing newline). WriteFile is atomic.
//   - [FromSession] turns a session's UI and API histories into a notebook.
//   - [Doc] changes a notebook file's cells by id — the agent's notebook
//     tools, when no frontend has the notebook — without ever writing over a
//     newer file ([ErrChanged]); runner.Run answers the same tools'
//     requests on the notebook it runs, over the notebook comm.
//
// Files: notebook.go (the types), read.go, write.go, session.go (session
// export), cells.go (Doc), swap.go (the save that never overwrites a newer
// file).
//
// Ownership: the package keeps no global state.
package notebooks
