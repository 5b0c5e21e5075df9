package searcher

import (
	"errors"
	"net/http"
	"time"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

// RegisterRoutes serves GET /v1/search. The layout parameter picks the hot
// layout, split or the nested baseline; without it, the search runs on
// srch.DefaultKind (hot when the cluster runs it, else split). fb, if
// not nil, answers a search that named no layout from another layout when
// the default one is unavailable (see Fallback).
//
// A layout that cannot answer (OpenSearch unreachable, failed shards, a red
// index) is a 503 with Retry-After naming the layout, never a 500. A search
// past its deadline (Config.Timeout) is a 503 with Retry-After for that
// request only: it names no layout and is never retried on another.
func RegisterRoutes(s *api.Server, srch *Searcher, fb ...*Fallback) {
	var fallback *Fallback
	if len(fb) > 0 {
		fallback = fb[0]
	}
	s.Handle("GET /v1/search", func(w http.ResponseWriter, r *http.Request) error {
		params := r.URL.Query()
		kind := srch.DefaultKind()
		named := params.Get("layout") != ""
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
		if err != nil && !named && unavailable(err) && r.Context().Err() == nil {
			// A search that named no layout may be answered by an
			// equivalent one; a search that named one never is.
			if fresp, ferr := fallback.Search(r.Context(), srch, req, kind); ferr == nil {
				resp, err = fresp, nil
			}
		}
		if r.Context().Err() != nil {
			// The client went away: nothing to answer, nothing to log.
			return api.NewProblem(499, "client closed the request")
		}
		if errors.Is(err, ErrTimeout) {
			return &api.DeadlineError{Deadline: srch.cfg.Timeout, RetryAfter: retryAfter(fallback), Err: err,
				Hint: "make the search cheaper: fewer words, a filter, an earlier page"}
		}
		if err != nil && unavailable(err) {
			ue := api.Unavailable("layout "+string(kind), retryAfter(fallback), err)
			if errors.Is(err, ErrLayoutUnavailable) || (kind == layout.Hot && osapi.IsStatus(err, http.StatusServiceUnavailable)) {
				// The layout cannot run on this cluster, or the hot layout's
				// table is rebuilding on a node (the plugin answers 503).
				ue.Reason = unavailableReason(srch, kind)
			}
			return ue
		}
		if err != nil {
			return err
		}
		api.WriteJSON(w, http.StatusOK, resp)
		return nil
	}, api.Params(query.Params()...))
}

// retryAfter is the Retry-After of a refused search.
func retryAfter(fb *Fallback) time.Duration {
	if fb == nil {
		return api.DefaultRetryAfter
	}
	return fb.cfg.RetryAfter
}

// unavailableReason says why a layout cannot answer, without internals.
func unavailableReason(srch *Searcher, k layout.Kind) string {
	if why := srch.Unavailable(k); why != "" {
		return why
	}
	return "its in-memory table is being rebuilt"
}
