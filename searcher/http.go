package searcher

import (
	"errors"
	"net/http"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

// RegisterRoutes serves GET /v1/search. The layout parameter picks split (the
// default), the nested baseline or the hot layout, for comparison.
func RegisterRoutes(s *api.Server, srch *Searcher) {
	s.Handle("GET /v1/search", func(w http.ResponseWriter, r *http.Request) error {
		params := r.URL.Query()
		kind := layout.Split
		if l := params.Get("layout"); l != "" {
			k, err := layout.ParseKind(l)
			if err != nil {
				return api.BadRequest("layout", "unknown layout "+l, layout.KindNames()...)
			}
			kind = k
		}
		req, err := query.ParseRequest(params)
		if err != nil {
			var fe *query.FieldError
			if errors.As(err, &fe) {
				return api.BadRequest(fe.Field, fe.Detail, fe.Allowed...)
			}
			return err
		}
		resp, err := srch.Search(r.Context(), req, kind)
		if errors.Is(err, ErrLayoutUnavailable) || (kind == layout.Hot && osapi.IsStatus(err, http.StatusServiceUnavailable)) {
			// The hot layout's table is rebuilding on a node (the plugin
			// answers 503), or the layout cannot run on this cluster.
			w.Header().Set("Retry-After", "5")
			return api.NewProblem(http.StatusServiceUnavailable, "the "+string(kind)+" layout cannot answer now; retry, or pick another layout: "+unavailableReason(srch, kind))
		}
		if errors.Is(err, ErrTimeout) {
			return api.NewProblem(http.StatusGatewayTimeout, err.Error())
		}
		if errors.Is(err, ErrPartialResults) {
			return api.NewProblem(http.StatusBadGateway, "OpenSearch answered with partial results (failed shards or a timeout); retry")
		}
		if r.Context().Err() != nil {
			// The client went away: nothing to answer, nothing to log.
			return api.NewProblem(499, "client closed the request")
		}
		if err != nil {
			return err
		}
		api.WriteJSON(w, http.StatusOK, resp)
		return nil
	})
}

// unavailableReason says why a layout cannot answer, without internals.
func unavailableReason(srch *Searcher, k layout.Kind) string {
	if why := srch.Unavailable(k); why != "" {
		return why
	}
	return "its in-memory table is being rebuilt"
}
