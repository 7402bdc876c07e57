package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// InitOptions configure Init.
type InitOptions struct {
	// AdminURL is the database as the role that owns (or creates) the
	// schema: a superuser, or a role with CREATEROLE that owns the tables.
	// Required. Its search_path, if given, names the schema.
	AdminURL string
	// ExistingOwner owns the rows written before sessions had an owner.
	// Default: the role that wrote them — the tables' owner, which created
	// the schema on first use and wrote every row when every kernel shared
	// one role — unless that is a superuser; then AdminRole.
	ExistingOwner string
}

// InitReport says what Init did.
type InitReport struct {
	From, To int    // the schema versions before and after
	Owner    string // who owns the tables
	// ExistingOwner owns the rows that had no owner ("" when there were
	// none to give one).
	ExistingOwner string
	// Removed is what Init took away because it made the store wider than
	// documented: policies not its own, privileges beyond the documented
	// set ("policy handmade on ui_messages", "TRUNCATE on blobs to bob").
	Removed []string
}

// Init creates or upgrades the schema of a shared PostgreSQL store and
// puts it under row-level security (pgSecure), in one transaction: the
// group roles UserRole and AdminRole are created when missing, the tables
// and the migrations are applied, the policies and grants (re)made. It is
// safe to run again: it repairs policies and grants. A login role then
// needs membership in UserRole (Grant) to use the store.
func Init(ctx context.Context, o InitOptions) (InitReport, error) {
	var rep InitReport
	if !IsPostgresURL(o.AdminURL) {
		return rep, errors.New("store: init: want the postgres:// URL of a role that may create the schema")
	}
	opts, err := Options{URL: o.AdminURL}.withDefaults()
	if err != nil {
		return rep, err
	}
	db, pool, err := pgConnect(ctx, opts)
	if err != nil {
		return rep, fmt.Errorf("store: init %s: %w", RedactURL(o.AdminURL), err)
	}
	defer pool.Close()
	defer db.Close()
	fail := func(err error) (InitReport, error) {
		return rep, fmt.Errorf("store: init %s: %w", RedactURL(o.AdminURL), err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if err := pgInit(ctx, tx, o, &rep); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	rep.To = len(pgMigrations)
	return rep, nil
}

// pgInit is Init's transaction, as the schema owner: the group roles, the
// migrations, the owners bound, the store narrowed to what is documented
// and secured (pgSecure). It fills rep as it goes.
func pgInit(ctx context.Context, tx *sql.Tx, o InitOptions, rep *InitReport) error {
	// One init at a time (migratePG takes the same lock again).
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", pgLockKey); err != nil {
		return fmt.Errorf("lock schema: %w", err)
	}
	if err := pgGroupRoles(ctx, tx); err != nil {
		return err
	}
	if err := pgUnforce(ctx, tx); err != nil {
		return err
	}
	if err := pgMigrateOwned(ctx, tx, o.ExistingOwner, rep); err != nil {
		return err
	}
	if err := pgBindOwners(ctx, tx); err != nil {
		return err
	}
	var err error
	if rep.Removed, err = pgNarrow(ctx, tx); err != nil {
		return err
	}
	if err := pgSecure(ctx, tx); err != nil {
		return err
	}
	if wide, err := pgWidened(ctx, tx); err != nil || len(wide) > 0 {
		return errors.Join(err, fmt.Errorf("still wider than documented after init: %v", wide))
	}
	return tx.QueryRowContext(ctx, "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass('sessions')").Scan(&rep.Owner)
}

// pgUnforce lets the owner see every row while it migrates (FORCE would
// hold it to the policies too); pgSecure forces the policies again before
// the transaction commits, so no one ever sees the tables without them.
func pgUnforce(ctx context.Context, tx *sql.Tx) error {
	for _, t := range pgTables {
		if _, err := tx.ExecContext(ctx, "DO $$ BEGIN IF to_regclass("+pgQuote(t)+") IS NOT NULL THEN "+
			"ALTER TABLE "+t+" NO FORCE ROW LEVEL SECURITY; END IF; END $$"); err != nil {
			return fmt.Errorf("the tables must be owned by the role of --admin-url (or it must be a superuser): %w", err)
		}
	}
	return nil
}

// pgMigrateOwned applies the migrations, the rows written before sessions
// had an owner given to existing (default: pgWriter's), and records in rep
// the version it found and, when there were such rows, their owner.
func pgMigrateOwned(ctx context.Context, tx *sql.Tx, existing string, rep *InitReport) error {
	m := migration{owner: existing}
	var err error
	if m.owner == "" {
		if m.owner, err = pgWriter(ctx, tx); err != nil {
			return err
		}
	} else if err := pgRoleExists(ctx, tx, m.owner); err != nil {
		return err
	}
	var hadRows bool
	if rep.From, err = migratePG(ctx, tx, len(pgMigrations), m); err != nil {
		return err
	}
	if rep.From > 0 && rep.From < 6 {
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM sessions) OR EXISTS (SELECT 1 FROM blobs)").Scan(&hadRows); err != nil {
			return err
		}
	}
	if hadRows {
		rep.ExistingOwner = m.owner
	}
	return nil
}

// pgBindOwners binds every name that owns or is granted rows: to its
// role's OID, or to 0 when the role is gone, so that no role made later
// under that name takes the rows over.
func pgBindOwners(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO ak_owners (name, oid)
		SELECT n, coalesce((SELECT oid FROM pg_roles WHERE rolname = n), 0) FROM (SELECT owner FROM sessions
			UNION SELECT owner FROM blobs UNION SELECT owner FROM file_index UNION SELECT grantee FROM session_shares) x(n)
		ON CONFLICT (name) DO NOTHING`); err != nil {
		return fmt.Errorf("bind the owners to their roles: %w", err)
	}
	return nil
}

// pgGroupRoles creates UserRole and AdminRole when missing (that needs
// CREATEROLE), and makes a schema owner that is not a superuser a member
// of AdminRole, which owns the search function.
func pgGroupRoles(ctx context.Context, tx *sql.Tx) error {
	for _, r := range []string{UserRole, AdminRole} {
		q := fmt.Sprintf(`DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %[1]s) THEN
		CREATE ROLE %[2]s NOLOGIN;
	END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$`, pgQuote(r), r)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create the group role %s (the role of --admin-url needs CREATEROLE, or create it first): %w", r, err)
		}
	}
	var super bool
	if err := tx.QueryRowContext(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
		return err
	}
	if !super {
		if _, err := tx.ExecContext(ctx, "DO $$ BEGIN IF NOT pg_has_role(current_user, "+pgQuote(AdminRole)+
			", 'MEMBER') THEN EXECUTE 'GRANT "+AdminRole+" TO ' || quote_ident(current_user); END IF; END $$"); err != nil {
			return fmt.Errorf("make the schema owner a member of %s: %w", AdminRole, err)
		}
	}
	return nil
}

// pgWriter is who owns the rows written before sessions had an owner (see
// InitOptions.ExistingOwner).
func pgWriter(ctx context.Context, tx *sql.Tx) (string, error) {
	var owner sql.NullString
	var super sql.NullBool
	err := tx.QueryRowContext(ctx, `SELECT r.rolname, r.rolsuper FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
		WHERE c.oid = to_regclass('sessions')`).Scan(&owner, &super)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (!owner.Valid || super.Bool)) {
		return AdminRole, nil
	}
	return owner.String, err
}

func pgRoleExists(ctx context.Context, tx *sql.Tx, role string) error {
	var ok bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ?)", role).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no role %q in the database", role)
	}
	return nil
}
