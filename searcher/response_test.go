package searcher

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestPartialResponsesAreErrors: OpenSearch answers 200 when some shards
// failed or the search timed out; such a response is an error, not a page.
func TestPartialResponsesAreErrors(t *testing.T) {
	cases := []struct {
		body, wantErr string
	}{
		{`{"took":3,"timed_out":false,"_shards":{"total":2,"successful":2,"skipped":0,"failed":0},"hits":{"hits":[]}}`, ""},
		{`{"took":3,"timed_out":false,"_shards":{"total":2,"successful":1,"skipped":0,"failed":1,"failures":[{"shard":1,"index":"menus","reason":{"type":"script_exception"}}]},"hits":{"hits":[]}}`,
			`1 of 2 shards failed: {"shard":1,"index":"menus","reason":{"type":"script_exception"}}`},
		{`{"took":500,"timed_out":true,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"hits":[]}}`, "timed out"},
		{`{"took":1,"pit_id":"abc","hits":{"hits":[]}}`, ""}, // no _shards: nothing says it is partial
	}
	for _, c := range cases {
		var r searchResponse
		if err := json.Unmarshal([]byte(c.body), &r); err != nil {
			t.Fatal(err)
		}
		err := r.complete()
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v, want no error", c.body, err)
		case c.wantErr != "" && (!errors.Is(err, ErrPartialResults) || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: %v, want ErrPartialResults with %q", c.body, err, c.wantErr)
		}
	}
}
