package indexer

import (
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/layout"
)

// The hot table keeps a row without its shop document through a rebuild for
// 10 minutes, so a batch's retrying must end well before.
func TestRetryForIsBoundedWhenTheHotLayoutRuns(t *testing.T) {
	c := Defaults()
	c.RetryFor = MaxHotRetryFor + time.Second
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "retry-for") || !strings.Contains(err.Error(), "hot layout") {
		t.Fatalf("Validate with retry-for %s and the hot layout: got %v, want an error naming retry-for and the hot layout", c.RetryFor, err)
	}
	c.Layouts = []layout.Kind{layout.Nested, layout.Split}
	if err := c.Validate(); err != nil {
		t.Fatalf("without the hot layout, retry-for %s is allowed: %v", c.RetryFor, err)
	}
}
