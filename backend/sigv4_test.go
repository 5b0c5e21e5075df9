package backend

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
)

// TestOpenSearchRequestsAreSignedWithSigV4 puts a verifying proxy in front
// of the stack's real OpenSearch: it checks each request's AWS SigV4
// signature with its own implementation of the algorithm (AWS's "Create a
// signed AWS API request"), as Amazon OpenSearch Service does, and forwards
// only requests that pass. baedal's client, given a region and credentials
// from the AWS variables, gets answers through it (a GET and a POST with a
// body, whose hash is signed); the same client with the wrong secret is
// refused.
func TestOpenSearchRequestsAreSignedWithSigV4(t *testing.T) {
	st := stacktest.Require(t)
	const keyID, secret, region = "AKIDBAEDALTEST", "baedal-test-secret", "ap-northeast-2"
	target, err := url.Parse(st.OpenSearchURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	var verified atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifySigV4(r, body, keyID, secret, region, "es"); err != nil {
			http.Error(w, `{"message":"`+err.Error()+`"}`, http.StatusForbidden)
			return
		}
		verified.Add(1)
		r.Body = io.NopCloser(bytes.NewReader(body))
		forward.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	// Only the variables below, never the machine's AWS files or instance role.
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_ACCESS_KEY_ID", keyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	cfg := Defaults().OpenSearch
	cfg.URLs, cfg.AWSRegion = []string{proxy.URL}, region
	client, err := OpenOpenSearch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	osc, ctx := osapi.New(client), context.Background()
	var health struct {
		ClusterName string `json:"cluster_name"`
	}
	if err := osc.Do(ctx, http.MethodGet, "/_cluster/health?timeout=5s&local=true", nil, &health); err != nil || health.ClusterName == "" {
		t.Fatalf("signed GET through the verifying proxy: %+v, %v", health, err)
	}
	var search struct {
		Hits struct {
			Total struct{ Value int } `json:"total"`
		} `json:"hits"`
	}
	if err := osc.Do(ctx, http.MethodPost, "/_search?size=0", []byte(`{"query": {"match_all": {}}}`), &search); err != nil {
		t.Fatalf("signed POST with a body through the verifying proxy: %v", err)
	}
	if verified.Load() != 2 {
		t.Errorf("the proxy verified %d requests, want 2", verified.Load())
	}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	wrong, err := OpenOpenSearch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := osapi.New(wrong).Do(ctx, http.MethodGet, "/_cluster/health", nil, nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a request signed with the wrong secret: %v, want the proxy's 403", err)
	}
}

func TestOpenSearchSigV4ConfigNamesTheField(t *testing.T) {
	cfg := Defaults().OpenSearch
	cfg.URLs, cfg.AWSRegion, cfg.AWSService = []string{"https://search.example.com"}, "us-east-1", "opensearch"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "opensearch-aws-service") || !strings.Contains(err.Error(), "es, aoss") {
		t.Errorf("service %q: %v, want an error naming opensearch-aws-service and es, aoss", cfg.AWSService, err)
	}
	cfg.AWSService, cfg.Username, cfg.Password = "aoss", "admin", "pw"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "opensearch-username") {
		t.Errorf("SigV4 beside basic auth: %v, want an error naming both", err)
	}
}

// verifySigV4 checks r's Authorization header as AWS does: the credential
// scope, the signed headers (host and x-amz-date among them), the payload
// hash against the body, and the signature over the canonical request.
func verifySigV4(r *http.Request, body []byte, keyID, secret, region, service string) error {
	auth := r.Header.Get("Authorization")
	fields := map[string]string{}
	for _, part := range strings.Split(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ", ") {
		if k, v, ok := strings.Cut(part, "="); ok {
			fields[k] = v
		}
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || len(amzDate) != 16 {
		return fmt.Errorf("not a SigV4 request: Authorization %q, X-Amz-Date %q", auth, amzDate)
	}
	scope := amzDate[:8] + "/" + region + "/" + service + "/aws4_request"
	if fields["Credential"] != keyID+"/"+scope {
		return fmt.Errorf("credential %q, want %s/%s", fields["Credential"], keyID, scope)
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != payload {
		return fmt.Errorf("payload hash %q, the body's is %s", got, payload)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-date") {
		return fmt.Errorf("signed headers %v lack host or x-amz-date", signed)
	}
	var canon strings.Builder
	fmt.Fprintf(&canon, "%s\n%s\n%s\n", r.Method, r.URL.EscapedPath(), canonicalQuery(r.URL.Query()))
	for _, h := range signed {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		fmt.Fprintf(&canon, "%s:%s\n", h, strings.TrimSpace(v))
	}
	fmt.Fprintf(&canon, "\n%s\n%s", fields["SignedHeaders"], payload)
	canonSum := sha256.Sum256([]byte(canon.String()))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(canonSum[:])
	key := []byte("AWS4" + secret)
	for _, part := range []string{amzDate[:8], region, service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	if want := hex.EncodeToString(hmacSHA256(key, toSign)); !hmac.Equal([]byte(fields["Signature"]), []byte(want)) {
		return fmt.Errorf("signature does not match the canonical request")
	}
	return nil
}

func canonicalQuery(q url.Values) string {
	var parts []string
	for k, vs := range q {
		for _, v := range vs {
			parts = append(parts, awsEscape(k)+"="+awsEscape(v))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "&")
}

// awsEscape is RFC 3986 percent-encoding: spaces as %20, ~ left alone.
func awsEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(url.QueryEscape(s), "+", "%20"), "%7E", "~")
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
