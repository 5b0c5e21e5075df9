package stacktest

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Database creates a PostgreSQL database of this test's own on the stack
// and returns its URL. It is dropped, its connections closed, when the test
// ends. Tests whose data would meet other tests' in the stack's shared
// database (the feed's tables have no key prefix) use it.
func Database(t testing.TB) string {
	t.Helper()
	st := Require(t)
	name := Namespace(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, st.PostgresURL)
	if err != nil {
		t.Fatalf("connect to postgres: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, st.PostgresURL)
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(st.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
