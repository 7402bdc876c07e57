package store

import (
	"context"
	"database/sql"
)

// FileStat is one row of a workspace tracker's index: a file's stat when
// its content (Hash, a blob) was last read. A Size of -1 means the file
// must be read again. Its fields are checkpoint.IndexEntry's.
type FileStat struct {
	Path                      string
	Size, MTime, CTime, Inode int64
	Hash                      string
}

// LoadIndex returns the index of the workspace at root. The index is the
// store's user's: on PostgreSQL keyed by owner too, so that users whose
// workspaces have the same path (every pod's /home/jovyan) never see or
// share each other's.
func (s *Store) LoadIndex(ctx context.Context, root string) ([]FileStat, error) {
	var out []FileStat
	err := s.readTx(ctx, "load file index", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT path, size, mtime, ctime, inode, hash FROM file_index WHERE workspace = ?"+pgOwn, root)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f FileStat
			if err := rows.Scan(&f.Path, &f.Size, &f.MTime, &f.CTime, &f.Inode, &f.Hash); err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, err
}

// SaveIndex writes the rows put and removes the paths del of the index of
// the workspace at root, in one transaction.
func (s *Store) SaveIndex(ctx context.Context, root string, put []FileStat, del []string) error {
	if len(put)+len(del) == 0 {
		return nil
	}
	return s.writeTx(ctx, "save file index", func(tx *sql.Tx) error {
		if len(put) > 0 {
			st, err := tx.PrepareContext(ctx, `INSERT INTO file_index (workspace, path, size, mtime, ctime, inode, hash)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (/*pg owner, */workspace, path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime,
	ctime = excluded.ctime, inode = excluded.inode, hash = excluded.hash`)
			if err != nil {
				return err
			}
			defer st.Close()
			for _, f := range put {
				if _, err := st.ExecContext(ctx, root, f.Path, f.Size, f.MTime, f.CTime, f.Inode, f.Hash); err != nil {
					return err
				}
			}
		}
		if len(del) > 0 {
			st, err := tx.PrepareContext(ctx, "DELETE FROM file_index WHERE workspace = ? AND path = ?"+pgOwn)
			if err != nil {
				return err
			}
			defer st.Close()
			for _, p := range del {
				if _, err := st.ExecContext(ctx, root, p); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
