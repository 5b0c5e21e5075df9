package feed

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one schema change, applied once, in version order.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// migrationsTable records applied versions. It is specific to this package
// because other packages may keep their own tables in the same database.
const migrationsTable = "feed_schema_migrations"

// migrationLockKey serializes concurrent Migrate calls (several processes
// starting at once) with a PostgreSQL advisory lock: "feed" in ASCII.
const migrationLockKey = 0x66656564

var migrationName = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// Migrations returns the schema changes embedded in the binary.
func Migrations() ([]Migration, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return parseMigrations(sub)
}

// parseMigrations reads NNNN_name.sql files. Versions must be 1, 2, 3, ...
// without gaps or duplicates, so a missing file is noticed.
func parseMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("feed: read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("feed: migration file %q: want NNNN_name.sql (4 digits, lower-case name)", e.Name())
		}
		version, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(fsys, path.Clean(e.Name()))
		if err != nil {
			return nil, fmt.Errorf("feed: read migration %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: version, Name: m[2], SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("feed: migration versions must be 1..%d without gaps or duplicates; position %d has version %d (%s)", len(out), i+1, m.Version, m.Name)
		}
	}
	return out, nil
}

// Migrate applies the embedded migrations that the database has not seen
// yet, each in its own transaction, and returns the versions it applied.
// Concurrent callers wait for each other. A database with a version newer
// than this binary knows is refused.
func Migrate(ctx context.Context, db *pgxpool.Pool) ([]int, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	return applyMigrations(ctx, db, ms)
}

func applyMigrations(ctx context.Context, db *pgxpool.Pool, ms []Migration) (applied []int, err error) {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("feed: migrate: acquire connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLockKey)); err != nil {
		return nil, fmt.Errorf("feed: migrate: take advisory lock: %w", err)
	}
	defer func() {
		// A fresh context: the unlock must run even if ctx was cancelled.
		_, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLockKey))
		if uerr != nil {
			err = errors.Join(err, fmt.Errorf("feed: migrate: release advisory lock: %w", uerr))
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("feed: migrate: create %s: %w", migrationsTable, err)
	}
	rows, err := conn.Query(ctx, "SELECT version FROM "+migrationsTable)
	if err != nil {
		return nil, fmt.Errorf("feed: migrate: read %s: %w", migrationsTable, err)
	}
	done := map[int]bool{}
	maxDone := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, err
		}
		done[v] = true
		maxDone = max(maxDone, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("feed: migrate: read %s: %w", migrationsTable, err)
	}
	if maxDone > len(ms) {
		return nil, fmt.Errorf("feed: migrate: the database is at schema version %d, newer than this binary's %d; upgrade the binary", maxDone, len(ms))
	}
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return applied, err
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			tx.Rollback(ctx)
			return applied, fmt.Errorf("feed: migration %04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+migrationsTable+" (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			tx.Rollback(ctx)
			return applied, fmt.Errorf("feed: record migration %04d_%s: %w", m.Version, m.Name, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return applied, fmt.Errorf("feed: commit migration %04d_%s: %w", m.Version, m.Name, err)
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}
