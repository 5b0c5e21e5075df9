package layout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/baedal/baedal/internal/osapi"
)

// bulkLoadSettings are the index settings a bulk load changes: no refresh
// and no replica while the documents go in (each replica would index every
// document again), restored afterwards.
var bulkLoadSettings = map[string]any{
	"index.refresh_interval":     "-1",
	"index.auto_expand_replicas": "false",
	"index.number_of_replicas":   0,
}

// PauseForBulkLoad turns refresh off and removes the replicas of every
// index behind the layouts' aliases, for a bulk load into them. The
// returned restore puts back each index's own values of those settings (an
// unset one back to OpenSearch's default) and refreshes the indices, so
// that what was loaded is searchable when it returns. Call restore even
// when the load failed.
func (c *Config) PauseForBulkLoad(ctx context.Context, os *osapi.Client, kinds ...Kind) (restore func(context.Context) error, err error) {
	var aliases []string
	for _, k := range kinds {
		aliases = append(aliases, c.Aliases(k)...)
	}
	target := "/" + strings.Join(aliases, ",")
	var current map[string]struct {
		Settings map[string]any `json:"settings"`
	}
	if err := os.Do(ctx, http.MethodGet, target+"/_settings?flat_settings=true", nil, &current); err != nil {
		return nil, fmt.Errorf("layout: read the settings of %s before a bulk load: %w", strings.Join(aliases, ", "), err)
	}
	saved := map[string]map[string]any{} // index → setting → value (nil: unset)
	for index, s := range current {
		saved[index] = map[string]any{}
		for key := range bulkLoadSettings {
			saved[index][key] = s.Settings[key]
		}
	}
	body, _ := json.Marshal(bulkLoadSettings)
	if err := os.Do(ctx, http.MethodPut, target+"/_settings", body, nil); err != nil {
		return nil, fmt.Errorf("layout: pause refresh and replicas of %s for a bulk load: %w", strings.Join(aliases, ", "), err)
	}
	return func(ctx context.Context) error {
		for index, s := range saved {
			body, _ := json.Marshal(s)
			if err := os.Do(ctx, http.MethodPut, "/"+index+"/_settings", body, nil); err != nil {
				return fmt.Errorf("layout: restore the settings of %s after a bulk load: %w", index, err)
			}
		}
		if err := os.Do(ctx, http.MethodPost, target+"/_refresh", nil, nil); err != nil {
			return fmt.Errorf("layout: refresh %s after a bulk load: %w", strings.Join(aliases, ", "), err)
		}
		return nil
	}, nil
}
