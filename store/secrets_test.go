package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"testing"
)

// TestMigrationPurgesSecrets: a store written before checkpoints withheld
// secrets (schema 4; PostgreSQL's 3) kept the contents of .env files and keys. Opened by
// this build, it holds none of them: their blobs are gone, their file
// changes keep their path with the withheld hash, their index entries go,
// and everything else is as it was.
func TestMigrationPurgesSecrets(t *testing.T) {
	ctx := context.Background()
	// A store of schema 4, as an older build left it.
	db, upgrade := oldStore(t, 4)
	id, _ := oldRows(t, db, 4, 1, "x")
	var pk int64
	must(t, db.QueryRow("SELECT pk FROM sessions WHERE id = ?", id).Scan(&pk))
	const (
		envKey  = "OPENAI_API_KEY=sk-migrationtest0123456789"
		sshKey  = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAmigrationtest\n-----END OPENSSH PRIVATE KEY-----\n"
		mcpJSON = `{"mcpServers":{"x":{"command":"x","env":{"TOKEN":"ghp_migrationtest0123456789"}}}}`
		plain   = "print('hello')\n"
		shared  = "same bytes as a harmless file\n"
	)
	put := func(data string) string {
		sum := sha256.Sum256([]byte(data))
		h := hex.EncodeToString(sum[:])
		_, err := db.Exec("INSERT INTO blobs (hash, size, data) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", h, len(data), []byte(data))
		must(t, err)
		return h
	}
	hEnv, hSSH, hMCP, hPlain, hShared := put(envKey), put(sshKey), put(mcpJSON), put(plain), put(shared)
	hPlain2 := put(plain + "# more\n")
	_, err := db.Exec("DELETE FROM file_changes")
	must(t, err)
	for _, c := range []FileChange{
		{Anchor: 10, Path: ".env", After: hEnv},
		{Anchor: 10, Path: "id_ed25519", Before: hShared, After: hSSH},
		{Anchor: 10, Path: "keys/deploy", After: hSSH}, // a key under a name that says nothing
		{Anchor: 10, Path: "sub/.mcp.json", After: hMCP},
		{Anchor: 10, Path: "main.py", Before: hPlain, After: hPlain2},
		{Anchor: 10, Path: "notes.txt", After: hShared},
		{Anchor: 20, Path: ".env", Before: hEnv},
	} {
		_, err := db.Exec("INSERT INTO file_changes (session_pk, anchor, path, before, after) VALUES (?, ?, ?, ?, ?)",
			pk, c.Anchor, c.Path, nullHash(c.Before), nullHash(c.After))
		must(t, err)
	}
	for _, f := range []FileStat{
		{Path: ".env", Size: 1, Hash: hEnv}, {Path: "id_ed25519", Size: 1, Hash: hSSH},
		{Path: "main.py", Size: 1, Hash: hPlain2}, {Path: "notes.txt", Size: 1, Hash: hShared},
	} {
		_, err := db.Exec("INSERT INTO file_index (workspace, path, size, mtime, ctime, inode, hash) VALUES ('/ws2', ?, ?, 0, 0, 0, ?)",
			f.Path, f.Size, f.Hash)
		must(t, err)
	}
	s2, err := Open(ctx, upgrade(testRole))
	must(t, err)
	defer s2.Close()

	for name, h := range map[string]string{"the .env file": hEnv, "the private key": hSSH, "the .mcp.json": hMCP} {
		if ok, err := s2.HasBlob(ctx, h); err != nil || ok {
			t.Errorf("%s is still stored (%v)", name, err)
		}
	}
	for name, h := range map[string]string{"main.py before": hPlain, "main.py after": hPlain2, "the shared content": hShared} {
		if ok, err := s2.HasBlob(ctx, h); err != nil || !ok {
			t.Errorf("%s was purged (%v)", name, err)
		}
	}
	// No secret anywhere in the blobs table, whatever its hash.
	must(t, s2.readTx(ctx, "scan", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT data FROM blobs")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&data); err != nil {
				return err
			}
			for _, secret := range []string{"sk-migrationtest", "migrationtest\n-----END", "ghp_migrationtest"} {
				if bytes.Contains(data, []byte(secret)) {
					t.Errorf("a blob still holds %q", secret)
				}
			}
		}
		return rows.Err()
	}))

	got, err := s2.FileChanges(ctx, id, 0)
	must(t, err)
	want := []FileChange{
		{Anchor: 10, Path: ".env", After: "!"},
		{Anchor: 10, Path: "id_ed25519", Before: "!", After: "!"},
		{Anchor: 10, Path: "keys/deploy", After: "!"},
		{Anchor: 10, Path: "sub/.mcp.json", After: "!"},
		{Anchor: 10, Path: "main.py", Before: hPlain, After: hPlain2},
		{Anchor: 10, Path: "notes.txt", After: hShared},
		{Anchor: 20, Path: ".env", Before: "!"},
	}
	equalJSON(t, "file changes", got, want)
	idx, err := s2.LoadIndex(ctx, "/ws2")
	must(t, err)
	var paths []string
	for _, e := range idx {
		paths = append(paths, e.Path)
	}
	equalJSON(t, "index paths", paths, []string{"main.py", "notes.txt"})
}
