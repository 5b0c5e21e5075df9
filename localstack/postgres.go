package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database is the database the stack creates for baedal.
const Database = "baedal"

// postgresUser is the superuser initdb creates in the stack's cluster.
const postgresUser = "baedal"

// postgresCredential returns the credential to run PostgreSQL with: it
// refuses to run as root, so as root we run it as Debian's postgres user.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgres: running as root needs the 'postgres' system user (created by the postgresql-15 package): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// newPassword returns a random password for the stack's superuser.
func newPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// initPostgres creates the cluster's data directory once, with password
// authentication for the baedal superuser.
func initPostgres(ctx context.Context, stateDir, password string) error {
	dir := filepath.Join(stateDir, "postgres")
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return nil
	}
	cred, err := postgresCredential()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	if cred != nil {
		if err := checkSearchable(dir); err != nil {
			return err
		}
	}
	pwfile := filepath.Join(dir, "initdb.pw")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	if cred != nil {
		for _, p := range []string{dir, data, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("postgres: chown %s to the postgres user: %w", p, err)
			}
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(postgresBinDir, "initdb"),
		"-D", data, "-U", postgresUser, "--pwfile", pwfile, "--auth", "scram-sha-256", "-E", "UTF8", "--no-locale")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("postgres: initdb -D %s: %w\n%s", data, err, lastLines(string(out), 15))
	}
	return nil
}

// startPostgres starts the server on 127.0.0.1:port with no Unix socket.
func startPostgres(stateDir string, port int) (Process, error) {
	cred, err := postgresCredential()
	if err != nil {
		return Process{}, err
	}
	data := filepath.Join(stateDir, "postgres", "data")
	logPath := filepath.Join(stateDir, "logs", "postgres.log")
	cmd := exec.Command(filepath.Join(postgresBinDir, "postgres"), "-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "max_connections=200",
		"-c", "shared_buffers=128MB")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if cred != nil {
		// The log file is opened by us (root) and handed over, so ownership
		// does not matter; the data directory must belong to postgres.
		if err := os.Chown(filepath.Join(stateDir, "postgres"), int(cred.Uid), int(cred.Gid)); err != nil {
			return Process{}, err
		}
	}
	return startProcess("postgres", cmd, logPath)
}

// PostgresURL is the connection URL of a database in the stack.
func postgresURL(port int, password, database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(postgresUser, password),
		Host:     "127.0.0.1:" + strconv.Itoa(port),
		Path:     "/" + database,
		RawQuery: "sslmode=disable&connect_timeout=5",
	}
	return u.String()
}

// waitPostgres waits until the server accepts connections, then creates the
// baedal database if it does not exist yet.
func waitPostgres(ctx context.Context, p Process, port int, password string) error {
	return waitFor(ctx, p, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, postgresURL(port, password, "postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", Database).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+Database)
		return err
	})
}

// probePostgres checks that the baedal database accepts connections.
func probePostgres(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// checkSearchable makes sure the postgres user can reach dir: every ancestor
// must be searchable by others (we run as root, the server as postgres).
func checkSearchable(dir string) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("postgres: the postgres user cannot reach %s: %s has mode %s; use a --state-dir whose parent directories are searchable (chmod o+x)",
				dir, d, info.Mode().Perm())
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}
