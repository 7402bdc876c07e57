package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentkernel/agentkernel/internal/pgtest"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// The secrets a user keeps beside their notebooks, which nothing may copy
// into the session store: an .env file, a private key, an .mcp.json whose
// env holds a token, and the API key of the environment itself.
var plantedSecrets = map[string]string{
	".env":       "OPENAI_API_KEY=sk-planted-envfile-7f3a9c2e\n",
	"id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQplantedsshkey\n-----END OPENSSH PRIVATE KEY-----\n",
	".mcp.json":  `{"mcpServers": {"tracker": {"command": "no-such-mcp-server-for-this-test", "env": {"TRACKER_TOKEN": "ghp_plantedmcptoken5e1d"}}}}`,
}

var secretMarks = []string{"sk-planted-envfile-7f3a9c2e", "plantedsshkey", "ghp_plantedmcptoken5e1d", "sk-planted-environment-91b4"}

// TestNoSecretInTheStore drives a session in a workspace that holds
// secrets — code run in a real kernel (which changes the secret files, as
// code may), a file written and edited by the tools, a rewind, a fork, an
// export and an import — and then reads every table of the store, on
// SQLite and on PostgreSQL, and every export: none holds a secret. The
// rewind left the secret files alone and said so.
func TestNoSecretInTheStore(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			srv, ws := askEnv(t)
			t.Setenv("OPENAI_API_KEY", "sk-planted-environment-91b4")
			dump := dumpSQLite
			if engine == "postgres" {
				u := startPostgres(t)
				t.Setenv(store.EnvStore, u)
				dump = func(t *testing.T) []byte { return dumpPostgres(t, pgtest.WithUser(u, "postgres")) }
			}
			for p, c := range plantedSecrets {
				if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// One line of code that touches every secret file, as a
			// careless cell might, then a file written and edited.
			touch := `{"code": "import pathlib\nfor p in ['.env', 'id_ed25519', '.mcp.json']: pathlib.Path(p).write_text(pathlib.Path(p).read_text() + '\\n# touched\\n')"}`
			srv.Enqueue(
				scripted.Reply(scripted.Text("Running it."), scripted.ToolCall("c1", "execute_code", touch)),
				scripted.Reply(scripted.ToolCall("c2", "write_file", `{"path": "notes.md", "content": "first\n"}`)),
				scripted.Reply(scripted.ToolCall("c3", "edit_file", `{"path": "notes.md", "search": "first", "replace": "second"}`)),
				scripted.Reply(scripted.Text("Done.")),
			)
			out, err := ask(t, strings.NewReader(""), "Tidy up the workspace", "--approve", "all", "--output-format", "json")
			if err != nil {
				t.Fatal(err)
			}
			id := sessionIDOf(t, out)
			if b, _ := os.ReadFile(filepath.Join(ws, ".env")); !bytes.Contains(b, []byte("# touched")) {
				t.Fatalf("the code did not run: .env = %q", b)
			}

			var exports [][]byte
			sessions := func(args ...string) string {
				t.Helper()
				var o, e bytes.Buffer
				if err := runSessions(args, strings.NewReader(""), &o, &e); err != nil {
					t.Fatalf("sessions %v: %v\n%s", args, err, e.String())
				}
				return o.String()
			}
			exports = append(exports, []byte(sessions("export", id)))
			exports = append(exports, []byte(sessions("export", id, "--format", "ipynb")))
			fork := sessions("fork", id, "#1", "--json")
			exports = append(exports, []byte(fork))
			rewound := sessions("rewind", id, "#1")
			if !strings.Contains(rewound, "Left alone (protected") || !strings.Contains(rewound, ".env") {
				t.Errorf("the rewind does not say it left the secret files alone:\n%s", rewound)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, ".env")); !bytes.Contains(b, []byte("# touched")) {
				t.Errorf("the rewind changed .env: %q", b)
			}
			if _, err := os.Stat(filepath.Join(ws, "notes.md")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the rewind did not remove notes.md, which the session created (%v)", err)
			}
			exp := filepath.Join(t.TempDir(), "s.jsonl")
			sessions("export", id, "-o", exp)
			sessions("rm", id, "--purge")
			sessions("import", exp)
			b, err := os.ReadFile(exp)
			if err != nil {
				t.Fatal(err)
			}
			exports = append(exports, b)

			whole := append(dump(t), bytes.Join(exports, []byte("\n"))...)
			if len(whole) < 1000 {
				t.Fatalf("the dump is too small to mean anything (%d bytes)", len(whole))
			}
			if !bytes.Contains(whole, []byte("Tidy up the workspace")) {
				t.Fatal("the dump does not hold the session's prompt: the search below would prove nothing")
			}
			for _, s := range secretMarks {
				if bytes.Contains(whole, []byte(s)) || bytes.Contains(whole, []byte(hex.EncodeToString([]byte(s)))) {
					t.Errorf("the store or an export holds the secret %q", s)
				}
			}
		})
	}
}

func sessionIDOf(t *testing.T, out string) string {
	t.Helper()
	evs := parseEvents(t, out)
	id := evs[len(evs)-1].str("session_id")
	if id == "" {
		t.Fatalf("no session id in %s", out)
	}
	return id
}

// startPostgres gives the test a fresh schema on a throwaway PostgreSQL,
// set up by store init, and returns its URL as a user of the store.
func startPostgres(t *testing.T) string {
	t.Helper()
	srv, admin := sharedStore(t)
	return roleURL(t, srv, admin, "ak_secrets")
}

// dumpSQLite returns every row of every table of the data directory's
// store, as bytes.
func dumpSQLite(t *testing.T) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(os.Getenv("AGENTKERNEL_DATA_DIR"), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names := queryStrings(t, db, "SELECT name FROM sqlite_master WHERE type = 'table'")
	var out bytes.Buffer
	for _, n := range names {
		rows, err := db.Query(`SELECT * FROM "` + n + `"`)
		if err != nil {
			t.Fatalf("read %s: %v", n, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				switch v := v.(type) {
				case []byte:
					out.Write(v)
				case string:
					out.WriteString(v)
				}
				out.WriteByte('\t')
			}
			out.WriteByte('\n')
		}
		rows.Close()
	}
	return out.Bytes()
}

// dumpPostgres returns every row of every table of the store's schema as
// PostgreSQL's text form (bytea as hex).
func dumpPostgres(t *testing.T, u string) []byte {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var names []string
	rows, err := c.Query(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	rows.Close()
	if len(names) < 5 {
		t.Fatalf("tables %v: not the store's schema", names)
	}
	var out bytes.Buffer
	for _, n := range names {
		rows, err := c.Query(ctx, `SELECT t::text FROM "`+n+`" t`)
		if err != nil {
			t.Fatalf("read %s: %v", n, err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out.WriteString(s + "\n")
		}
		rows.Close()
	}
	return out.Bytes()
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
