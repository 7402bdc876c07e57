package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A shared PostgreSQL store keeps each user to their own sessions with the
// database's row-level security, so that a user who reads the store's URL
// from their kernel's environment and connects with psql sees exactly what
// agentkernel shows them.
//
// Roles:
//   - the schema owner: whoever runs Init (agentkernel store init
//     --admin-url), a superuser or a role with CREATEROLE that owns the
//     schema. It owns the tables, so it could turn row-level security off:
//     Open refuses it, as it refuses superusers and BYPASSRLS roles.
//   - UserRole (agentkernel_user): a group role. Each user connects as a
//     login role of their own that is a member; it gets SELECT, INSERT,
//     UPDATE and DELETE on the tables, never CREATE, so it cannot drop or
//     change a policy.
//   - AdminRole (agentkernel_admin): a group role whose members see and
//     may clean up every session (support, audits).
//
// Policies (pgSecure), on every table, with FORCE ROW LEVEL SECURITY:
//   - ak_own (all commands, UserRole): the row's owner is current_user and
//     its owner_oid the caller's role (pgOwnPolicy); a new row must also
//     be of the role ak_owners binds the name to (pgOwnCheck; on sessions
//     the restrictive ak_new, and a session's rows follow it). A
//     role made later under a dropped role's name owns none of its rows
//     and writes none; Open, Share and Grant bind a name that is free with
//     ak_bind, and an administrator's change of a binding moves the rows
//     of the name to its new role (ak_hand_over);
//   - ak_shared (SELECT, UserRole; sessions and their messages, code runs,
//     file and cell changes): the row is the role's own, or its session is
//     in session_shares (ak_shared_sessions), which a role sees for its own
//     sessions and for the grants to it or to a group it is a member of
//     (ak_granted: pg_has_role(current_user, grantee, 'MEMBER'), the
//     grantee bound in ak_owners too);
//   - ak_admin (all commands, AdminRole): every row.
//
// They cost a user's statements little: an append's server time is within
// a few per cent of a role's without them (BenchmarkAppendRLS measures it,
// side by side). The owner test reads no table (pgOwnPolicy), so the
// several copies of it PostgreSQL puts in one statement (an UPDATE checks
// the old row for UPDATE and SELECT, the new one for both) are each a
// comparison; a written row reads ak_owners once, in an InitPlan. An
// append to a session with messages is one UPDATE and its INSERTs
// (bumpSession), or one statement for one message that is not the user's
// (pgAppendOne); a listing of one page is one statement outside a
// transaction (readOne). ak_shared tests the owner first: PostgreSQL ORs
// the policies in an order of its own, and so the shares, a hashed
// SubPlan built on first use, are read only when a row is another's. They
// are read through ak_shared_sessions, a function PostgreSQL does not
// inline, so that a statement does not plan the query of session_shares
// and its policies every time it runs.
//
// Blobs and the file index have an owner in their keys: content is
// deduplicated within a user's checkpoints, never across users, and no
// one else's index entry or file content is ever visible.

// The group roles of a shared PostgreSQL store.
const (
	UserRole  = "agentkernel_user"
	AdminRole = "agentkernel_admin"
)

// pgTables are agentkernel's tables: each has row-level security.
var pgTables = []string{"sessions", "ui_messages", "api_messages", "code_runs", "file_changes",
	"cell_changes", "blobs", "file_index", "session_shares", "agentkernel_schema", "ak_owners"}

// pgGrants are the privileges the group roles hold on a table (and
// nothing else does, but its owner): SELECT, INSERT, UPDATE and DELETE,
// but on agentkernel_schema (SELECT) and on ak_owners (SELECT; an
// administrator may also write it, to hand a dropped role's sessions on).
func pgGrants(table, role string) []string {
	switch {
	case table == "agentkernel_schema", table == "ak_owners" && role == UserRole:
		return []string{"SELECT"}
	}
	return []string{"SELECT", "INSERT", "UPDATE", "DELETE"}
}

// pgChildren are the tables of a session's rows, which its readers read.
var pgChildren = []string{"ui_messages", "api_messages", "code_runs", "file_changes", "cell_changes"}

// pgQuote quotes s as an SQL string literal.
func pgQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// pgOwnSessions is PostgreSQL's schema 6: an owner on every row, whose
// existing rows get owner (a constant default costs no rewrite) and new
// ones current_user; a session's rows carry their session's owner (a
// foreign key on both columns, so that no row can be slipped into another
// user's session); blobs and the file index keyed by owner; the grants.
func pgOwnSessions(ctx context.Context, tx *sql.Tx, owner string) error {
	lit := pgQuote(owner)
	var b strings.Builder
	addOwner := func(t string) {
		fmt.Fprintf(&b, "ALTER TABLE %s ADD COLUMN owner TEXT NOT NULL DEFAULT %s;\n", t, lit)
		fmt.Fprintf(&b, "ALTER TABLE %s ALTER COLUMN owner SET DEFAULT current_user;\n", t)
	}
	addOwner("sessions")
	b.WriteString(`ALTER TABLE sessions ADD COLUMN owner_name TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD CONSTRAINT sessions_pk_owner UNIQUE (pk, owner);
CREATE INDEX sessions_owner_updated ON sessions(owner, updated_at DESC, pk DESC);
`)
	for _, t := range pgChildren {
		addOwner(t)
		fmt.Fprintf(&b, `ALTER TABLE %[1]s DROP CONSTRAINT %[1]s_session_pk_fkey;
ALTER TABLE %[1]s ADD CONSTRAINT %[1]s_session_owner_fkey FOREIGN KEY (session_pk, owner)
	REFERENCES sessions(pk, owner) ON DELETE CASCADE ON UPDATE CASCADE;
`, t)
	}
	addOwner("blobs")
	b.WriteString("ALTER TABLE blobs DROP CONSTRAINT blobs_pkey, ADD PRIMARY KEY (owner, hash);\n")
	addOwner("file_index")
	b.WriteString("ALTER TABLE file_index DROP CONSTRAINT file_index_pkey, ADD PRIMARY KEY (owner, workspace, path);\n")
	b.WriteString(`CREATE TABLE session_shares (
	session_pk BIGINT NOT NULL,
	owner      TEXT   NOT NULL DEFAULT current_user,
	grantee    TEXT   NOT NULL,
	granted_at BIGINT NOT NULL,
	PRIMARY KEY (session_pk, grantee),
	FOREIGN KEY (session_pk, owner) REFERENCES sessions(pk, owner) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX session_shares_grantee ON session_shares(grantee);
`)
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("own sessions: %w", err)
	}
	return nil
}

// pgSecure puts every table under row-level security with the policies
// described at the top of this file, grants the group roles what they
// need and nothing more, and (re)creates the search function. Run by Init
// every time (it repairs what was changed by hand), as the schema owner.
func pgSecure(ctx context.Context, tx *sql.Tx) error {
	var schema string
	if err := tx.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return fmt.Errorf("secure: %w", err)
	}
	ident := pgx.Identifier{schema}.Sanitize()
	var b strings.Builder
	fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s, %s;\n", ident, UserRole, AdminRole)
	pgSharedSessionsFunc(&b, ident)
	for _, t := range pgTables {
		pgSecureTable(&b, t)
	}
	pgBindFunc(&b, ident)
	pgHandOverFunc(&b, ident)
	pgSearchFunc(&b, ident)
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("secure: %w", err)
	}
	return nil
}

// pgPolicy writes the statement that creates the policy name on the
// table t, for cmd and role, using using and, unless it is "", checking
// check.
func pgPolicy(b *strings.Builder, t, name, cmd, role, using, check string) {
	fmt.Fprintf(b, "CREATE POLICY %s ON %s FOR %s TO %s USING (%s)", name, t, cmd, role, using)
	if check != "" {
		fmt.Fprintf(b, " WITH CHECK (%s)", check)
	}
	b.WriteString(";\n")
}

// pgSharedSessionsFunc writes ak_shared_sessions, the sessions shared with
// the caller: session_shares as the caller sees it, through its policies
// (SECURITY INVOKER). The SET clause keeps PostgreSQL from inlining it
// into every statement's plan. ident is the schema, quoted.
func pgSharedSessionsFunc(b *strings.Builder, ident string) {
	fmt.Fprintf(b, `CREATE OR REPLACE FUNCTION ak_shared_sessions() RETURNS SETOF bigint LANGUAGE sql STABLE
SET search_path = %[1]s, pg_catalog, pg_temp AS $f$ SELECT session_pk FROM session_shares $f$;
REVOKE ALL ON FUNCTION ak_shared_sessions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ak_shared_sessions() TO %[2]s;
`, ident, UserRole)
}

// pgOwnPolicy is a row the caller owns: of their name, and of their role
// (owner_oid, the role the name was bound to when the row was written) —
// so a role made later under a dropped one's name sees none of its rows,
// whose OID is no role's. Both are plain expressions, with no subquery
// and no table: owner = current_user is an index condition (the owner
// leads the indexes of what a user lists), and pg_has_role(oid) looks in
// the backend's cache of the caller's memberships. A role it holds counts
// as its own there, but a row is written only with the writer's own OID
// (pgOwnCheck, pgOwnRole, or for a session's row its foreign key to the
// session), and with the writer's name. Reading ak_owners in
// each policy instead (an InitPlan per policy, six in an append's UPDATE)
// cost an append 10–20% of its server time.
const pgOwnPolicy = "owner = current_user AND pg_has_role(owner_oid, 'MEMBER')"

// pgOwnCheck is what a new session, blob or index entry of the caller's
// must be: of their name and of their role, and that name bound to that
// role in ak_owners, so that a role that took a dropped one's name writes
// nothing. A statement reads ak_owners for it once, in an InitPlan. On
// sessions it is a restrictive policy of INSERT (ak_new); a session
// changed must be of the caller's role (pgOwnRole), which it was already
// (pgOwnPolicy), so that the UPDATE of each append reads no table. A
// session's rows (pgSessionRows) are checked with pgOwnPolicy alone: the
// foreign key to their session (session_pk, owner, owner_oid) holds them
// to a session so checked, and so to the writer's role — and an append's
// INSERTs read no table for their policy either.
const pgOwnCheck = "owner = current_user AND owner_oid = (SELECT o.oid FROM ak_owners o WHERE o.name = current_user::text " +
	"AND o.oid = to_regrole(quote_ident(current_user)))"

// pgOwnRole is a row of the caller's name and role, no other role of theirs.
const pgOwnRole = "owner = current_user AND owner_oid = (SELECT to_regrole(quote_ident(current_user))::oid)"

// pgSecureTable writes what puts the table t under row-level security:
// forced, every privilege and policy taken away, then the grants
// (pgGrants) and the policies (pgPolicies) that are its own.
func pgSecureTable(b *strings.Builder, t string) {
	fmt.Fprintf(b, "ALTER TABLE %[1]s ENABLE ROW LEVEL SECURITY;\nALTER TABLE %[1]s FORCE ROW LEVEL SECURITY;\n", t)
	fmt.Fprintf(b, "REVOKE ALL ON %s FROM PUBLIC, %s, %s;\n", t, UserRole, AdminRole)
	for p := range pgPolicies {
		fmt.Fprintf(b, "DROP POLICY IF EXISTS %s ON %s;\n", p, t)
	}
	for _, r := range []string{UserRole, AdminRole} {
		fmt.Fprintf(b, "GRANT %s ON %s TO %s;\n", strings.Join(pgGrants(t, r), ", "), t, r)
	}
	switch t {
	case "agentkernel_schema":
		// Everyone reads the version; only the owner (Init) writes it.
		pgPolicy(b, t, "ak_read", "SELECT", "PUBLIC", "true", "")
		return
	case "ak_owners":
		// Users read the bindings (the policies); ak_bind and administrators write them.
		pgPolicy(b, t, "ak_bound", "SELECT", UserRole, "true", "")
		pgPolicy(b, t, "ak_admin", "ALL", AdminRole, "true", "true")
		return
	}
	check := pgOwnCheck
	switch {
	case t == "sessions":
		check = pgOwnRole
		// A new session must also be of a bound name (as well as ak_own).
		fmt.Fprintf(b, "CREATE POLICY ak_new ON %s AS RESTRICTIVE FOR INSERT TO %s WITH CHECK (%s);\n", t, UserRole, pgOwnCheck)
	case slices.Contains(pgSessionRows, t):
		check = pgOwnPolicy
	}
	pgPolicy(b, t, "ak_own", "ALL", UserRole, pgOwnPolicy, check)
	pgPolicy(b, t, "ak_admin", "ALL", AdminRole, "true", "true")
	switch {
	case t == "sessions":
		pgPolicy(b, t, "ak_shared", "SELECT", UserRole, "("+pgOwnPolicy+") OR pk IN (SELECT ak_shared_sessions())", "")
	case t == "session_shares":
		// A grant is to a role bound in ak_owners (Share binds it).
		pgPolicy(b, t, "ak_granted", "SELECT", UserRole, "grantee IN (SELECT o.name FROM ak_owners o JOIN pg_roles r "+
			"ON r.oid = o.oid AND r.rolname = o.name WHERE pg_has_role(current_user, r.oid, 'MEMBER'))", "")
	case slices.Contains(pgChildren, t):
		pgPolicy(b, t, "ak_shared", "SELECT", UserRole, "("+pgOwnPolicy+") OR session_pk IN (SELECT ak_shared_sessions())", "")
	}
}

// pgBindFunc writes ak_bind, which binds the role name to its OID in
// ak_owners unless the name is bound already, and reports whether the
// name is (now) this role's: false for a role that took the name of a
// dropped one that owned rows, or for no such role. Open binds its user,
// Share its grantee, Grant its role. Run as AdminRole, which alone writes
// ak_owners. ident is the schema, quoted.
func pgBindFunc(b *strings.Builder, ident string) {
	fmt.Fprintf(b, `CREATE OR REPLACE FUNCTION ak_bind(r text) RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = %[1]s, pg_catalog, pg_temp AS $f$
DECLARE id oid := (SELECT oid FROM pg_roles WHERE rolname = r);
BEGIN
	IF id IS NULL THEN RETURN false; END IF;
	INSERT INTO ak_owners (name, oid) VALUES (r, id) ON CONFLICT (name) DO NOTHING;
	RETURN EXISTS (SELECT 1 FROM ak_owners WHERE name = r AND oid = id);
END $f$;
GRANT CREATE ON SCHEMA %[1]s TO %[2]s;
ALTER FUNCTION ak_bind(text) OWNER TO %[2]s;
REVOKE CREATE ON SCHEMA %[1]s FROM %[2]s;
REVOKE ALL ON FUNCTION ak_bind(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ak_bind(text) TO %[3]s, %[2]s;
`, ident, AdminRole, UserRole)
}

// pgHandOverFunc writes the trigger that follows an administrator's
// change of a binding (UPDATE ak_owners SET oid = …, docs/scale-out.md)
// on every row of the name: owner_oid becomes the new role's, which then
// owns them. It runs as the administrator who changed it (SECURITY
// INVOKER: ak_admin lets them write every row). ident is the schema,
// quoted.
func pgHandOverFunc(b *strings.Builder, ident string) {
	fmt.Fprintf(b, `CREATE OR REPLACE FUNCTION ak_hand_over() RETURNS trigger LANGUAGE plpgsql
SET search_path = %[1]s, pg_catalog, pg_temp AS $f$
BEGIN
`, ident)
	for _, t := range pgOwned {
		if !slices.Contains(pgSessionRows, t) { // a session's rows follow it (ON UPDATE CASCADE)
			fmt.Fprintf(b, "\tUPDATE %s SET owner_oid = NEW.oid WHERE owner = NEW.name AND owner_oid <> NEW.oid;\n", t)
		}
	}
	b.WriteString(`	RETURN NULL;
END $f$;
REVOKE ALL ON FUNCTION ak_hand_over() FROM PUBLIC;
DROP TRIGGER IF EXISTS ak_hand_over ON ak_owners;
CREATE TRIGGER ak_hand_over AFTER UPDATE OF oid ON ak_owners FOR EACH ROW WHEN (OLD.oid IS DISTINCT FROM NEW.oid)
	EXECUTE FUNCTION ak_hand_over();
`)
}

// pgSearchFunc writes ak_search, the search through the GIN index.
// PostgreSQL does not use an index for a condition that is not leakproof
// (tsvector @@ tsquery is not) on a table under row-level security, so a
// search of every session would read every message. This function, run
// as AdminRole, finds the matches in the index and keeps those of the
// sessions the caller (session_user: inside, current_user is AdminRole)
// owns or is granted, by the same rule as the policies; the caller then
// reads the rows through its own policies. ident is the schema, quoted.
func pgSearchFunc(b *strings.Builder, ident string) {
	fmt.Fprintf(b, `CREATE OR REPLACE FUNCTION ak_search(q tsquery, lim bigint, archived boolean, ws text, mine boolean)
RETURNS SETOF bigint LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = %[1]s, pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan AS $f$
BEGIN
	RETURN QUERY SELECT m.seq FROM ui_messages m JOIN sessions s ON s.pk = m.session_pk
		WHERE m.tsv @@ q AND (archived OR s.archived_at IS NULL) AND (ws = '' OR s.workspace = ws)
		AND (m.owner = session_user OR (NOT mine AND m.session_pk IN (SELECT sh.session_pk FROM session_shares sh
			WHERE sh.grantee IN (SELECT r.rolname FROM pg_roles r WHERE pg_has_role(session_user, r.oid, 'MEMBER')))))
		ORDER BY m.seq DESC LIMIT lim;
END $f$;
GRANT CREATE ON SCHEMA %[1]s TO %[2]s; -- a new owner needs it, for this statement only
ALTER FUNCTION ak_search(tsquery, bigint, boolean, text, boolean) OWNER TO %[2]s;
REVOKE CREATE ON SCHEMA %[1]s FROM %[2]s;
REVOKE ALL ON FUNCTION ak_search(tsquery, bigint, boolean, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ak_search(tsquery, bigint, boolean, text, boolean) TO %[3]s;
`, ident, AdminRole, UserRole)
}

// pgPolicies are the policies pgSecure makes, by name, with the one role
// each is for ("" is PUBLIC).
var pgPolicies = map[string]string{"ak_own": UserRole, "ak_new": UserRole, "ak_shared": UserRole, "ak_granted": UserRole,
	"ak_admin": AdminRole, "ak_read": "", "ak_bound": UserRole}

// pgWidenedQuery lists what makes the store wider than pgSecure leaves
// it, one row each (what, the object, the role, the privilege): a policy
// on one of our tables that is not ours, or ours for another role; a
// privilege on a table, one of its columns or the schema held by anyone
// but the owner beyond the documented set — SELECT, INSERT, UPDATE and
// DELETE for UserRole and AdminRole (SELECT only on agentkernel_schema),
// USAGE on the schema. TRUNCATE, REFERENCES and TRIGGER pass row-level
// security by, and CREATE on the schema lets its holder put a function
// of theirs before pg_catalog in the search functions' search_path. The
// catalogs it reads are readable by every role, so Open runs it as the
// user. $1: the tables, $2: the policies' names, $3: their roles, $4-6:
// the grants (pgGrants), table, role and privilege.
const pgWidenedQuery = `WITH t AS (
	SELECT c.oid, c.relname::text AS name, c.relowner, c.relacl FROM pg_class c
	WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1::text[])
), want(name, role) AS (SELECT * FROM unnest($2::text[], $3::text[]))
SELECT 'policy', t.name, p.polname::text, '' FROM t JOIN pg_policy p ON p.polrelid = t.oid
	WHERE NOT EXISTS (SELECT 1 FROM want w WHERE w.name = p.polname
		AND p.polroles = ARRAY[CASE WHEN w.role = '' THEN 0::oid ELSE (SELECT oid FROM pg_roles WHERE rolname = w.role) END])
UNION ALL
SELECT 'table', t.name, coalesce(r.rolname::text, 'PUBLIC'), a.privilege_type FROM t CROSS JOIN LATERAL aclexplode(t.relacl) a
	LEFT JOIN pg_roles r ON r.oid = a.grantee
	WHERE a.grantee <> t.relowner AND NOT EXISTS (SELECT 1 FROM unnest($4::text[], $5::text[], $6::text[]) g(tbl, role, priv)
		WHERE g.tbl = t.name AND g.role = r.rolname AND g.priv = a.privilege_type)
UNION ALL
SELECT 'column', t.name || '.' || at.attname, coalesce(r.rolname::text, 'PUBLIC'), a.privilege_type
	FROM t JOIN pg_attribute at ON at.attrelid = t.oid AND at.attacl IS NOT NULL CROSS JOIN LATERAL aclexplode(at.attacl) a
	LEFT JOIN pg_roles r ON r.oid = a.grantee WHERE a.grantee <> t.relowner
UNION ALL
SELECT 'schema', n.nspname::text, coalesce(r.rolname::text, 'PUBLIC'), a.privilege_type
	FROM pg_namespace n CROSS JOIN LATERAL aclexplode(n.nspacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
	WHERE n.oid = current_schema()::regnamespace AND a.grantee <> n.nspowner AND a.privilege_type <> 'USAGE'
ORDER BY 1, 2, 3, 4`

// pgWidening is one row of pgWidenedQuery.
type pgWidening struct{ what, object, role, privilege string }

// String says it for people: "policy handmade on ui_messages",
// "TRUNCATE on blobs to bob".
func (w pgWidening) String() string {
	if w.what == "policy" {
		return "policy " + w.role + " on " + w.object
	}
	on := w.object
	switch w.what {
	case "column":
		on = "column " + w.object
	case "schema":
		on = "schema " + w.object
	}
	return w.privilege + " on " + on + " to " + w.role
}

// undo is the statement that takes w away.
func (w pgWidening) undo() string {
	role := "PUBLIC"
	if w.role != "PUBLIC" {
		role = pgx.Identifier{w.role}.Sanitize()
	}
	switch w.what {
	case "policy":
		return "DROP POLICY " + pgx.Identifier{w.role}.Sanitize() + " ON " + pgx.Identifier{w.object}.Sanitize()
	case "column":
		t, col, _ := strings.Cut(w.object, ".")
		return "REVOKE " + w.privilege + " (" + pgx.Identifier{col}.Sanitize() + ") ON " + pgx.Identifier{t}.Sanitize() + " FROM " + role
	case "schema":
		return "REVOKE " + w.privilege + " ON SCHEMA " + pgx.Identifier{w.object}.Sanitize() + " FROM " + role
	}
	return "REVOKE " + w.privilege + " ON " + pgx.Identifier{w.object}.Sanitize() + " FROM " + role
}

// pgWidened runs pgWidenedQuery.
func pgWidened(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) ([]pgWidening, error) {
	names, roles := make([]string, 0, len(pgPolicies)), make([]string, 0, len(pgPolicies))
	for n, r := range pgPolicies {
		names, roles = append(names, n), append(roles, r)
	}
	var gt, gr, gp []string
	for _, t := range pgTables {
		for _, r := range []string{UserRole, AdminRole} {
			for _, p := range pgGrants(t, r) {
				gt, gr, gp = append(gt, t), append(gr, r), append(gp, p)
			}
		}
	}
	// pgx encodes a []string as text[].
	rows, err := q.QueryContext(ctx, pgWidenedQuery, pgTables, names, roles, gt, gr, gp)
	if err != nil {
		return nil, fmt.Errorf("read the policies and grants: %w", err)
	}
	defer rows.Close()
	var out []pgWidening
	for rows.Next() {
		var w pgWidening
		if err := rows.Scan(&w.what, &w.object, &w.role, &w.privilege); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// pgNarrow takes away what pgWidened finds (pgSecure then makes the
// store's own policies and grants) and returns it, for Init's report.
func pgNarrow(ctx context.Context, tx *sql.Tx) ([]string, error) {
	wide, err := pgWidened(ctx, tx)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, w := range wide {
		if _, err := tx.ExecContext(ctx, w.undo()); err != nil {
			return nil, fmt.Errorf("take away %s: %w", w, err)
		}
		removed = append(removed, w.String())
	}
	return removed, nil
}

// Grant makes the login role a user of the shared store at adminURL (a
// member of UserRole), or with admin an administrator (of AdminRole).
func Grant(ctx context.Context, adminURL, role string, admin bool) error {
	group := UserRole
	if admin {
		group = AdminRole
	}
	return pgAdminExec(ctx, adminURL, "grant "+role, role, "GRANT "+group+" TO ", true)
}

// Revoke takes both memberships (UserRole, AdminRole) from the role: it
// can no longer use the shared store at adminURL. Its sessions stay.
func Revoke(ctx context.Context, adminURL, role string) error {
	return pgAdminExec(ctx, adminURL, "revoke "+role, role, "REVOKE "+UserRole+", "+AdminRole+" FROM ", false)
}

// pgAdminExec runs stmt+role as the administrator at adminURL; with bind,
// first binds role's name to it (ak_bind), refusing a name that was a
// dropped role's.
func pgAdminExec(ctx context.Context, adminURL, op, role, stmt string, bind bool) error {
	opts, err := Options{URL: adminURL}.withDefaults()
	if err != nil {
		return err
	}
	if !IsPostgresURL(adminURL) {
		return fmt.Errorf("store: %s: want the postgres:// URL of an administrator", op)
	}
	db, pool, err := pgConnect(ctx, opts)
	if err != nil {
		return fmt.Errorf("store: %s %s: %w", op, RedactURL(adminURL), err)
	}
	defer pool.Close()
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if err := pgRoleExists(ctx, tx, role); err != nil {
		return fmt.Errorf("store: %s: %w (create it first: CREATE ROLE %s LOGIN PASSWORD '…')", op, err, role)
	}
	if bind {
		var bound bool
		if err := tx.QueryRowContext(ctx, "SELECT ak_bind(?)", role).Scan(&bound); err != nil {
			return fmt.Errorf("store: %s: %w", op, err)
		}
		if !bound {
			return fmt.Errorf("store: %s: %w", op, reusedName(role))
		}
	}
	if _, err := tx.ExecContext(ctx, stmt+pgx.Identifier{role}.Sanitize()); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// reusedName is the refusal of a role that took the name of a dropped
// role, whose rows are still the old role's (ak_owners).
func reusedName(role string) error {
	return fmt.Errorf("role %[1]s is not the role %[1]s whose sessions are in the store: that one was dropped, and its "+
		"sessions stay its own; an administrator hands them to this role or deletes them first "+
		"(docs/scale-out.md, \"A role name used again\")", role)
}

// pgCheck is Open's check of a PostgreSQL store: the schema is this
// build's, every table is under row-level security, and the role is held
// to it. A role that would see every user's sessions without the policies
// (a superuser, BYPASSRLS, the tables' owner) or that has none (no member
// of UserRole or AdminRole) is refused with what to do. It sets s.user
// and s.admin.
func (s *Store) pgCheck(ctx context.Context, db *sql.DB) error {
	const initHint = "an administrator sets it up with agentkernel store init --admin-url URL (docs/scale-out.md)"
	var (
		super, bypass, user, admin, owner bool
		secured                           int
	)
	regs := make([]string, len(pgTables))
	for i, t := range pgTables {
		regs[i] = "to_regclass(" + pgQuote(t) + ")"
	}
	tables := "(" + strings.Join(regs, ", ") + ")"
	err := db.QueryRowContext(ctx, `SELECT current_user, r.rolsuper, r.rolbypassrls,
		coalesce((SELECT pg_has_role(current_user, oid, 'USAGE') FROM pg_roles WHERE rolname = ?), false),
		coalesce((SELECT pg_has_role(current_user, oid, 'USAGE') FROM pg_roles WHERE rolname = ?), false),
		(SELECT count(*) FROM pg_class c WHERE c.oid IN `+tables+` AND c.relrowsecurity AND c.relforcerowsecurity),
		coalesce((SELECT bool_or(pg_has_role(current_user, c.relowner, 'MEMBER')) FROM pg_class c WHERE c.oid IN `+tables+`), false)
		FROM pg_roles r WHERE r.rolname = current_user`, UserRole, AdminRole).
		Scan(&s.user, &super, &bypass, &user, &admin, &secured, &owner)
	if err != nil {
		return fmt.Errorf("check the role: %w", err)
	}
	switch {
	case super || bypass:
		return fmt.Errorf("role %s bypasses row-level security (a superuser or BYPASSRLS role would see every user's sessions): "+
			"connect as a login role of your own, a member of %s (docs/scale-out.md)", s.user, UserRole)
	case owner:
		return fmt.Errorf("role %s owns agentkernel's tables and could turn row-level security off: use it only for "+
			"agentkernel store init, and connect as a login role of your own, a member of %s", s.user, UserRole)
	case !user && !admin:
		return fmt.Errorf("role %s has no agentkernel policy: an administrator grants it with agentkernel store grant %s "+
			"(GRANT %s TO %s)", s.user, s.user, UserRole, s.user)
	}
	var v int
	err = db.QueryRowContext(ctx, "SELECT version FROM agentkernel_schema").Scan(&v)
	var pe interface{ SQLState() string }
	switch {
	case errors.As(err, &pe) && pe.SQLState() == "42P01", errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("no agentkernel schema in this database: %s", initHint)
	case err != nil:
		return fmt.Errorf("read schema version: %w", err)
	case v > len(pgMigrations):
		return fmt.Errorf("schema version %d is newer than this build supports (%d): upgrade agentkernel", v, len(pgMigrations))
	case v < len(pgMigrations):
		return fmt.Errorf("schema version %d is older than this build's (%d): %s", v, len(pgMigrations), initHint)
	case secured != len(pgTables):
		return fmt.Errorf("row-level security is not on for every table (%d of %d): %s", secured, len(pgTables), initHint)
	}
	wide, err := pgWidened(ctx, db)
	if err != nil {
		return err
	}
	if len(wide) > 0 {
		said := make([]string, len(wide))
		for i, w := range wide {
			said[i] = w.String()
		}
		return fmt.Errorf("the store is wider than documented (%s): another role could read or destroy what row-level "+
			"security keeps from it; an administrator takes it away with agentkernel store init --admin-url URL, "+
			"as the schema owner (docs/scale-out.md)", strings.Join(said, "; "))
	}
	var bound bool
	if err := db.QueryRowContext(ctx, "SELECT ak_bind(current_user::text)").Scan(&bound); err != nil {
		return fmt.Errorf("bind the role: %w", err)
	}
	if !bound {
		return reusedName(s.user)
	}
	s.admin = admin
	return nil
}
