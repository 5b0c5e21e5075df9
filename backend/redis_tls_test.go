package backend

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/internal/testenv"
)

// A managed Redis as users run it: TLS only, the default user off, an ACL
// user with a password. baedal reaches it by rediss:// URL with the CA file,
// and by host:port with the fields; a wrong password, a missing CA and a
// plaintext client are refused with errors that do not hold the password.
func TestRedisOverTLSWithAnACLUser(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writeCert(t, dir, "ca", nil, nil, nil)
	writeCert(t, dir, "server", ca, caKey, []net.IP{net.IPv4(127, 0, 0, 1)})
	writeCert(t, dir, "client", ca, caKey, nil)
	port := freePort(t)
	cmd := exec.Command("redis-server", "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", filepath.Join(dir, "server.pem"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "optional",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--user", "default", "off", "--user", "baedal", "on", ">s3cret-pw", "~*", "&*", "+@all")
	logFile, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		testenv.Unavailable(t, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	addr := "127.0.0.1:" + strconv.Itoa(port)
	base := Defaults().Redis
	byURL := base
	byURL.Addr = "rediss://baedal:s3cret-pw@" + addr + "/3"
	byURL.DB = 5 // the URL's /3 wins
	byURL.TLSCAFile = filepath.Join(dir, "ca.pem")
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := RedisVersion(ctx, byURL)
		if err == nil {
			if !strings.HasPrefix(v, "7.") && !strings.HasPrefix(v, "8.") {
				t.Errorf("version %q", v)
			}
			break
		}
		if time.Now().After(deadline) {
			testenv.Unavailable(t, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rdb, err := NewRedis(byURL, byURL.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if who := rdb.Do(ctx, "ACL", "WHOAMI").Val(); who != "baedal" {
		t.Errorf("ACL WHOAMI = %v, want baedal", who)
	}
	if db := rdb.Do(ctx, "CLIENT", "INFO").Val(); !strings.Contains(db.(string), " db=3 ") {
		t.Errorf("CLIENT INFO %v, want db=3 from the URL", db)
	}

	// The same server by host:port and fields: password from a file,
	// a client certificate, DB 0.
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	byFields := base
	byFields.Addr, byFields.Username, byFields.PasswordFile, byFields.TLS = addr, "baedal", pwFile, true
	byFields.TLSCAFile, byFields.TLSCertFile, byFields.TLSKeyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	if err := byFields.Validate(); err != nil {
		t.Fatal(err)
	}
	c2, err := NewRedis(byFields, byFields.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := c2.Exists(ctx, "k").Val(); got != 0 {
		t.Errorf("DB 0 sees the key written in DB 3: EXISTS = %d", got)
	}
	if err := c2.Ping(ctx).Err(); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}

	refused := func(name string, cfg RedisConfig) {
		t.Helper()
		c, err := NewRedis(cfg, cfg.Addr)
		if err == nil {
			defer c.Close()
			err = c.Ping(ctx).Err()
		}
		if err == nil {
			t.Errorf("%s: PING answered, want an error", name)
		} else if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong-pw") {
			t.Errorf("%s: the error holds the password: %v", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	wrongPw := byURL
	wrongPw.Addr = "rediss://baedal:wrong-pw@" + addr
	refused("a wrong password", wrongPw)
	noCA := byURL
	noCA.TLSCAFile = ""
	refused("no CA (the system roots do not know it)", noCA)
	plain := base
	plain.Addr = "redis://baedal:s3cret-pw@" + addr
	refused("plaintext to a TLS port", plain)
}

// The configuration names the field that is wrong.
func TestRedisConfigNamesTheWrongField(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	notPEM := filepath.Join(dir, "x.pem")
	_ = os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	for _, c := range []struct {
		mutate func(*RedisConfig)
		want   string
	}{
		{func(c *RedisConfig) { c.Addr = "http://127.0.0.1:6379" }, `redis-addr: got scheme "http", allowed: redis://, rediss://`},
		{func(c *RedisConfig) { c.Addr = "localhost" }, "redis-addr: got \"localhost\", want host:port"},
		{func(c *RedisConfig) { c.Addr = "redis://u:topsecret@127.0.0.1:1/x" }, "redis-addr:"},
		{func(c *RedisConfig) { c.ReplicaAddrs = []string{"nope"} }, "redis-addr: got \"nope\""},
		{func(c *RedisConfig) { c.Password, c.PasswordFile = "a", empty }, "redis-password, redis-password-file: give one"},
		{func(c *RedisConfig) { c.PasswordFile = empty }, "redis-password-file: " + empty + ": the first line is empty"},
		{func(c *RedisConfig) { c.PasswordFile = filepath.Join(dir, "missing") }, "redis-password-file: open"},
		{func(c *RedisConfig) { c.TLSCAFile = notPEM }, "redis-tls-ca-file: " + notPEM + " holds no PEM certificate"},
		{func(c *RedisConfig) { c.TLSCertFile = notPEM }, "redis-tls-cert-file, redis-tls-key-file: give both or neither"},
		{func(c *RedisConfig) { c.DB = 99999 }, "redis-db: got 99999"},
	} {
		cfg := Defaults().Redis
		cfg.Addr = "127.0.0.1:6379"
		c.mutate(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate() = %v, want %q", err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "topsecret") {
			t.Errorf("the error holds the password: %v", err)
		}
	}
	if got := RedactRedisAddr("rediss://app:topsecret@h:6380/2"); got != "rediss://app:xxxxx@h:6380/2" {
		t.Errorf("RedactRedisAddr = %s", got)
	}
	if got := RedactRedisAddr("127.0.0.1:6379"); got != "127.0.0.1:6379" {
		t.Errorf("RedactRedisAddr(host:port) = %s", got)
	}
}

// The OpenSearch TLS files are checked at start, naming the flag.
func TestOpenSearchTLSFilesAreChecked(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writeCert(t, dir, "ca", nil, nil, nil)
	writeCert(t, dir, "client", ca, caKey, nil)
	cfg := Defaults().OpenSearch
	cfg.URLs = []string{"https://127.0.0.1:9200"}
	cfg.TLSCAFile, cfg.TLSCertFile, cfg.TLSKeyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	rt, err := NewOpenSearchTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rt.TLSClientConfig.RootCAs == nil || len(rt.TLSClientConfig.Certificates) != 1 {
		t.Errorf("the transport lacks the CA or the client certificate")
	}
	cfg.TLSCAFile = filepath.Join(dir, "missing.pem")
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "opensearch-tls-ca-file: ") {
		t.Errorf("a missing CA file: %v", err)
	}
	cfg.TLSCAFile, cfg.TLSKeyFile = "", ""
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "give both or neither") {
		t.Errorf("a certificate without its key: %v", err)
	}
}

// writeCert writes <name>.pem and <name>.key: a CA when parent is nil,
// else a certificate signed by it for ips (server) or none (client).
func writeCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ips []net.IP) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "baedal test " + name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, kind string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".pem", "CERTIFICATE", der)
	write(name+".key", "EC PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
