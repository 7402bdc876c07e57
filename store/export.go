package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentkernel/agentkernel/messages"
)

// ExportVersion is the version of the JSONL export format.
const ExportVersion = 1

// maxImportLine caps one JSONL line (a message with inline images).
const maxImportLine = 256 << 20

// exportLine is one line of an export: the session header first, then the
// UI history, then the API history, each in order.
type exportLine struct {
	Kind    string          `json:"kind"` // session | ui | api
	Version int             `json:"version,omitempty"`
	Session *exportSession  `json:"session,omitempty"`
	Message json.RawMessage `json:"message,omitempty"`
}

type exportSession struct {
	ID          string `json:"id"`
	CreatedAt   int64  `json:"createdAt"`
	UpdatedAt   int64  `json:"updatedAt"`
	DisplayName string `json:"displayName,omitempty"`
	// Title is the derived title (DeriveTitle), for readers; import
	// derives it again from the messages.
	Title         string  `json:"title,omitempty"`
	Model         string  `json:"model,omitempty"`
	Provider      string  `json:"provider,omitempty"`
	Mode          string  `json:"mode,omitempty"`
	Workspace     string  `json:"workspace,omitempty"`
	TokensIn      int64   `json:"tokensIn,omitempty"`
	TokensOut     int64   `json:"tokensOut,omitempty"`
	CacheWrites   int64   `json:"cacheWrites,omitempty"`
	CacheReads    int64   `json:"cacheReads,omitempty"`
	Cost          float64 `json:"cost,omitempty"`
	ArchivedAt    int64   `json:"archivedAt,omitempty"`
	ArchiveReason string  `json:"archiveReason,omitempty"`
	// Owner and OwnerName say whose the session was, for readers; an
	// import is the importer's.
	Owner     string `json:"owner,omitempty"`
	OwnerName string `json:"ownerName,omitempty"`
}

// Export writes a session as JSONL: a session line, then one line per UI
// message and per API message, from one consistent snapshot. Pending
// streaming updates of the session are written first.
func (s *Store) Export(ctx context.Context, sessionID string, w io.Writer) error {
	if err := s.flushSession(ctx, sessionID); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := s.readTx(ctx, "export "+sessionID, func(tx *sql.Tx) error {
		ss, err := scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", sessionID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		hdr := &exportSession{
			ID: ss.ID, CreatedAt: ss.CreatedAt.UnixMilli(), UpdatedAt: ss.UpdatedAt.UnixMilli(),
			DisplayName: ss.DisplayName, Title: ss.Title, Model: ss.Model, Provider: ss.Provider, Mode: ss.Mode,
			Workspace: ss.Workspace, TokensIn: ss.Usage.TokensIn, TokensOut: ss.Usage.TokensOut,
			CacheWrites: ss.Usage.CacheWrites, CacheReads: ss.Usage.CacheReads, Cost: ss.Usage.Cost,
			ArchiveReason: ss.ArchiveReason, Owner: ss.Owner, OwnerName: ss.OwnerName,
		}
		if ss.Archived() {
			hdr.ArchivedAt = ss.ArchivedAt.UnixMilli()
		}
		if err := enc.Encode(exportLine{Kind: "session", Version: ExportVersion, Session: hdr}); err != nil {
			return fmt.Errorf("write export: %w", err)
		}
		pk, err := sessionPK(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		for _, t := range []struct{ kind, table string }{{"ui", "ui_messages"}, {"api", "api_messages"}} {
			if err := exportRows(ctx, tx, enc, pk, t.kind, t.table); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return s.wrap("export "+sessionID, fmt.Errorf("write export: %w", err))
	}
	return nil
}

func exportRows(ctx context.Context, tx *sql.Tx, enc *json.Encoder, pk int64, kind, table string) error {
	rows, err := tx.QueryContext(ctx, "SELECT payload FROM "+table+" WHERE session_pk = ? ORDER BY seq", pk)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var payload []byte
		if err := rows.Scan(&payload); err != nil {
			return err
		}
		if err := enc.Encode(exportLine{Kind: kind, Message: payload}); err != nil {
			return fmt.Errorf("write export: %w", err)
		}
	}
	return rows.Err()
}

// Import reads a session exported by Export and stores it under the same
// id, with the same metadata and histories, in one transaction, as a
// session of the store's user (whoever exported it). Every
// message is validated (messages.DecodeUI/DecodeAPI); an error names the
// line. A session that already exists gives ErrExists.
func (s *Store) Import(ctx context.Context, r io.Reader) (Session, error) {
	hdr, ui, api, err := readExport(r)
	if err != nil {
		return Session{}, s.wrap("import", err)
	}
	if err := s.importSession(ctx, hdr, ui, api); err != nil {
		return Session{}, err
	}
	return s.GetSession(ctx, hdr.ID)
}

// readExport reads and validates an export: its session line, then its
// messages. An error names the line.
func readExport(r io.Reader) (hdr *exportSession, ui []messages.UIMessage, api []messages.APIMessage, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var line int
	for {
		raw, err := readLine(br)
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var l exportLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case l.Kind == "session" && hdr == nil && line == 1:
			if l.Version != ExportVersion {
				return nil, nil, nil, fmt.Errorf("line %d: export version %d, want %d", line, l.Version, ExportVersion)
			}
			if l.Session == nil {
				return nil, nil, nil, fmt.Errorf("line %d: session line without a session", line)
			}
			if err := checkID(l.Session.ID); err != nil {
				return nil, nil, nil, fmt.Errorf("line %d: %w", line, err)
			}
			hdr = l.Session
		case hdr == nil:
			return nil, nil, nil, fmt.Errorf("line %d: want the session line first, got %q", line, l.Kind)
		case l.Kind == "ui":
			m, err := messages.DecodeUI(l.Message)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("line %d: %w", line, err)
			}
			ui = append(ui, m)
		case l.Kind == "api":
			m, err := messages.DecodeAPI(l.Message)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("line %d: %w", line, err)
			}
			api = append(api, m)
		default:
			return nil, nil, nil, fmt.Errorf("line %d: unexpected line kind %q", line, l.Kind)
		}
	}
	if hdr == nil {
		return nil, nil, nil, errors.New("empty export")
	}
	return hdr, ui, api, nil
}

// importSession stores an export read by readExport, in one transaction,
// as a session of the store's user.
func (s *Store) importSession(ctx context.Context, hdr *exportSession, ui []messages.UIMessage, api []messages.APIMessage) error {
	return s.writeTx(ctx, "import "+hdr.ID, func(tx *sql.Tx) error {
		var archived any
		if hdr.ArchivedAt != 0 {
			archived = hdr.ArchivedAt
		}
		var pk int64
		err := tx.QueryRowContext(ctx, `INSERT INTO sessions (id, created_at, updated_at, display_name, model,
			provider, mode, workspace, tokens_in, tokens_out, cache_writes, cache_reads, cost, archived_at, archive_reason,
			owner, owner_name)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING pk`,
			hdr.ID, hdr.CreatedAt, hdr.UpdatedAt, noUS(hdr.DisplayName), noUS(hdr.Model), noUS(hdr.Provider), noUS(hdr.Mode),
			noUS(hdr.Workspace), hdr.TokensIn, hdr.TokensOut, hdr.CacheWrites, hdr.CacheReads, hdr.Cost, archived,
			noUS(hdr.ArchiveReason), s.user, s.ownerName).Scan(&pk)
		if isConstraint(err) {
			return fmt.Errorf("session %s: %w", hdr.ID, ErrExists)
		}
		if err != nil {
			return err
		}
		sr := sessionRow{pk: pk}
		if err := insertUI(ctx, tx, sr, hdr.ID, ui, hdr.UpdatedAt); err != nil {
			return err
		}
		if err := insertAPI(ctx, tx, sr, api, hdr.UpdatedAt); err != nil {
			return err
		}
		// Inserting moved updated_at; the export's value is the truth.
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET updated_at = ? WHERE pk = ?", hdr.UpdatedAt, pk); err != nil {
			return err
		}
		return refreshDenorm(ctx, tx, pk)
	})
}

// readLine reads one '\n'-terminated line of at most maxImportLine bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > maxImportLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxImportLine)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(out) > 0:
			return out, nil
		default:
			return out, err
		}
	}
}
