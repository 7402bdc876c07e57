package store

import (
	"bytes"
	"context"
	"database/sql"
	"testing"
)

// TestMigrationPurgesSecrets: a store written before checkpoints withheld
// secrets (schema 4) kept the contents of .env files and keys. Opened by
// this build, it holds none of them: their blobs are gone, their file
// changes keep their path with the withheld hash, their index entries go,
// and everything else is as it was.
func TestMigrationPurgesSecrets(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	const (
		envKey  = "OPENAI_API_KEY=sk-migrationtest0123456789"
		sshKey  = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAmigrationtest\n-----END OPENSSH PRIVATE KEY-----\n"
		mcpJSON = `{"mcpServers":{"x":{"command":"x","env":{"TOKEN":"ghp_migrationtest0123456789"}}}}`
		plain   = "print('hello')\n"
		shared  = "same bytes as a harmless file\n"
	)
	put := func(data string) string {
		h, err := s.PutBlob(ctx, []byte(data))
		must(t, err)
		return h
	}
	hEnv, hSSH, hMCP, hPlain, hShared := put(envKey), put(sshKey), put(mcpJSON), put(plain), put(shared)
	hPlain2 := put(plain + "# more\n")
	must(t, s.AddFileChanges(ctx, id, []FileChange{
		{Anchor: 10, Path: ".env", After: hEnv},
		{Anchor: 10, Path: "id_ed25519", Before: hShared, After: hSSH},
		{Anchor: 10, Path: "keys/deploy", After: hSSH}, // a key under a name that says nothing
		{Anchor: 10, Path: "sub/.mcp.json", After: hMCP},
		{Anchor: 10, Path: "main.py", Before: hPlain, After: hPlain2},
		{Anchor: 10, Path: "notes.txt", After: hShared},
		{Anchor: 20, Path: ".env", Before: hEnv},
	}))
	must(t, s.SaveIndex(ctx, "/ws", []FileStat{
		{Path: ".env", Size: 1, Hash: hEnv}, {Path: "id_ed25519", Size: 1, Hash: hSSH},
		{Path: "main.py", Size: 1, Hash: hPlain2}, {Path: "notes.txt", Size: 1, Hash: hShared},
	}, nil))

	// Back to the schema before, as an older build left it.
	_, err := s.w.Exec("DROP TABLE cell_changes") // schema 6
	must(t, err)
	if s.pg {
		_, err := s.w.Exec("UPDATE agentkernel_schema SET version = 3")
		must(t, err)
	} else {
		_, err := s.w.Exec("PRAGMA user_version = 4")
		must(t, err)
	}
	o := reopen(s)
	must(t, s.Close())
	s2, err := Open(ctx, o)
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
	idx, err := s2.LoadIndex(ctx, "/ws")
	must(t, err)
	var paths []string
	for _, e := range idx {
		paths = append(paths, e.Path)
	}
	equalJSON(t, "index paths", paths, []string{"main.py", "notes.txt"})
}
