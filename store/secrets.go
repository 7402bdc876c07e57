package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentkernel/agentkernel/internal/protect"
)

// withheldHash is the hash a file change or index entry carries for a file
// whose content is never kept (checkpoint.Withheld): it may hold secrets.
const withheldHash = "!"

// purgeSecrets takes out of a store written before checkpoints withheld
// secrets every file content that may hold one: the files internal/protect
// names (.env, keys, credentials, .mcp.json…) and blobs that hold a private
// key whatever their file is called. Their file changes keep their path
// and anchor with the hash withheldHash (a rewind then says it left them
// alone), their index entries go (the tracker learns them again by stat),
// and their blobs are deleted unless a file that is not a secret has the
// same content. It runs inside a migration's transaction, on either engine.
func purgeSecrets(ctx context.Context, tx *sql.Tx, m migration) error {
	paths, err := secretPaths(ctx, tx)
	if err != nil {
		return err
	}
	// The hashes to delete: true, unless a file that is not a secret has
	// the same content.
	hashes := map[string]bool{}
	for _, p := range paths {
		if err := withholdPath(ctx, tx, p, hashes); err != nil {
			return err
		}
	}
	keys, err := privateKeyBlobs(ctx, tx, m)
	if err != nil {
		return err
	}
	for _, h := range keys {
		hashes[h] = false // deleted whatever else refers to it
		if err := withholdChanges(ctx, tx, "before = ? OR after = ?", h, h); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM file_index WHERE hash = ?", h); err != nil {
			return fmt.Errorf("purge secrets: index: %w", err)
		}
	}
	return deleteSecretBlobs(ctx, tx, hashes)
}

// secretPaths are the paths of file changes and index entries that
// internal/protect names.
func secretPaths(ctx context.Context, tx *sql.Tx) ([]string, error) {
	var paths []string
	rows, err := tx.QueryContext(ctx, "SELECT DISTINCT path FROM file_changes UNION SELECT DISTINCT path FROM file_index")
	if err != nil {
		return nil, fmt.Errorf("purge secrets: list paths: %w", err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return nil, fmt.Errorf("purge secrets: list paths: %w", err)
		}
		if protect.Path(p) != "" {
			paths = append(paths, p)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("purge secrets: list paths: %w", err)
	}
	return paths, nil
}

// withholdPath adds the contents the secret file p had or has to hashes
// (to delete unless used elsewhere), withholds its changes and removes its
// index entries.
func withholdPath(ctx context.Context, tx *sql.Tx, p string, hashes map[string]bool) error {
	if err := collectHashes(ctx, tx, hashes, "SELECT before FROM file_changes WHERE path = ? UNION SELECT after FROM file_changes WHERE path = ? UNION SELECT hash FROM file_index WHERE path = ?", p, p, p); err != nil {
		return fmt.Errorf("purge secrets: %w", err)
	}
	if err := withholdChanges(ctx, tx, "path = ?", p); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM file_index WHERE path = ?", p); err != nil {
		return fmt.Errorf("purge secrets: index: %w", err)
	}
	return nil
}

// collectHashes adds the content hashes q selects to hashes, to delete
// unless used elsewhere (not "did not exist", Unkept or withheldHash).
func collectHashes(ctx context.Context, tx *sql.Tx, hashes map[string]bool, q string, args ...any) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var h sql.NullString
		if err := rows.Scan(&h); err != nil {
			return err
		}
		if h.Valid && h.String != "" && h.String != "-" && h.String != withheldHash {
			hashes[h.String] = true
		}
	}
	return rows.Err()
}

// privateKeyBlobs are the hashes of the blobs that hold a private key,
// whatever their file is called: the database finds the candidates, the
// same test as the tracker's (protect.Content) decides.
func privateKeyBlobs(ctx context.Context, tx *sql.Tx, m migration) ([]string, error) {
	find := "SELECT hash, substr(data, 1, 4096) FROM blobs WHERE instr(data, ?) > 0"
	if m.pg {
		find = "SELECT hash, substring(data from 1 for 4096) FROM blobs WHERE position(? in data) > 0"
	}
	krows, err := tx.QueryContext(ctx, find, []byte("PRIVATE KEY-----"))
	if err != nil {
		return nil, fmt.Errorf("purge secrets: find keys: %w", err)
	}
	var keys []string
	for krows.Next() {
		var h string
		var head []byte
		if err := krows.Scan(&h, &head); err != nil {
			krows.Close()
			return nil, fmt.Errorf("purge secrets: find keys: %w", err)
		}
		if protect.Content(head) != "" {
			keys = append(keys, h)
		}
	}
	krows.Close()
	if err := krows.Err(); err != nil {
		return nil, fmt.Errorf("purge secrets: find keys: %w", err)
	}
	return keys, nil
}

// deleteSecretBlobs deletes the blobs of hashes: those marked true only
// when no file change or index entry refers to them any more.
func deleteSecretBlobs(ctx context.Context, tx *sql.Tx, hashes map[string]bool) error {
	for h, onlyIfUnused := range hashes {
		q := "DELETE FROM blobs WHERE hash = ?"
		args := []any{h}
		if onlyIfUnused {
			q += ` AND NOT EXISTS (SELECT 1 FROM file_changes WHERE before = ? OR after = ?)
				AND NOT EXISTS (SELECT 1 FROM file_index WHERE hash = ?)`
			args = append(args, h, h, h)
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("purge secrets: blobs: %w", err)
		}
	}
	return nil
}

// withholdChanges replaces the hashes of the file changes that where
// selects with withheldHash, keeping "did not exist" (NULL) as it is.
func withholdChanges(ctx context.Context, tx *sql.Tx, where string, args ...any) error {
	q := `UPDATE file_changes SET
		before = CASE WHEN before IS NULL THEN NULL ELSE '` + withheldHash + `' END,
		after  = CASE WHEN after IS NULL THEN NULL ELSE '` + withheldHash + `' END
		WHERE ` + where
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("purge secrets: file changes: %w", err)
	}
	return nil
}
