package reindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/baedal/baedal/api"
)

// MaxStartBody caps a start request (it may carry a whole index body).
const MaxStartBody = 1 << 20

// RegisterRoutes adds the admin endpoints (behind the admin token):
//
//	GET  /admin/reindex                      every job, newest first
//	POST /admin/reindex                      start a job (JSON Options) and run it; 202
//	GET  /admin/reindex/{id}                 status, copy progress and ETA
//	POST /admin/reindex/{id}/run             continue a stopped or failed job; 202
//	POST /admin/reindex/{id}/pause           slow the copy to the pause rate
//	POST /admin/reindex/{id}/resume          restore the copy rate
//	POST /admin/reindex/{id}/rethrottle      {"requests_per_second": N}, -1 = unthrottled
//	POST /admin/reindex/{id}/rollback        move the alias back; 202
//	POST /admin/reindex/{id}/cleanup         delete the index the alias left
//
// Jobs started or continued here run in the background until ctx ends; a
// server that stops leaves them resumable (run).
func RegisterRoutes(ctx context.Context, srv *api.Server, o *Orchestrator) {
	background := func(name, id string, f func(context.Context) error) {
		go func() {
			if err := f(ctx); err != nil && ctx.Err() == nil {
				o.log.Error("reindex "+name+" failed", "job", id, "err", err)
			}
		}()
	}
	srv.HandleAdmin("GET /admin/reindex", func(w http.ResponseWriter, r *http.Request) error {
		jobs, err := o.List(r.Context())
		if err != nil {
			return err
		}
		api.WriteJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
		return nil
	})
	srv.HandleAdmin("POST /admin/reindex", func(w http.ResponseWriter, r *http.Request) error {
		raw, err := io.ReadAll(io.LimitReader(r.Body, MaxStartBody+1))
		if err != nil {
			return err
		}
		if len(raw) > MaxStartBody {
			return api.NewProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("start request larger than %d bytes", MaxStartBody))
		}
		opts, err := ParseOptions(raw, o.Aliases())
		if err != nil {
			return err
		}
		st, err := o.Start(r.Context(), opts)
		if err != nil {
			return problem(err)
		}
		background("run", st.ID, func(ctx context.Context) error { return o.Run(ctx, st.ID) })
		api.WriteJSON(w, http.StatusAccepted, st)
		return nil
	}, api.Body(api.MediaTypeJSON))
	srv.HandleAdmin("GET /admin/reindex/{id}", func(w http.ResponseWriter, r *http.Request) error {
		st, err := o.Status(r.Context(), r.PathValue("id"))
		if err != nil {
			return problem(err)
		}
		api.WriteJSON(w, http.StatusOK, st)
		return nil
	})
	srv.HandleAdmin("POST /admin/reindex/{id}/{action}", func(w http.ResponseWriter, r *http.Request) error {
		id, action := r.PathValue("id"), r.PathValue("action")
		// The request's own form first: an unknown action is a 400 whether
		// or not the job exists, as api/openapi.json's enum says.
		if !slices.Contains(Actions(), action) {
			return api.BadRequest("action", fmt.Sprintf("unknown action %q", action), Actions()...)
		}
		if _, err := o.Status(r.Context(), id); err != nil {
			return problem(err)
		}
		var err error
		switch action {
		case "run":
			background("run", id, func(ctx context.Context) error { return o.Run(ctx, id) })
		case "rollback":
			background("rollback", id, func(ctx context.Context) error { return o.Rollback(ctx, id) })
		case "pause":
			err = o.Pause(r.Context(), id)
		case "resume":
			err = o.Resume(r.Context(), id)
		case "rethrottle":
			var body struct {
				RequestsPerSecond *float64 `json:"requests_per_second"`
			}
			if derr := api.DecodeJSON(r, 4096, &body); derr != nil {
				return derr // 413 over 4 KB; 400 naming the field
			}
			if body.RequestsPerSecond == nil {
				return api.BadRequest("requests_per_second", "body must be {\"requests_per_second\": N}", "-1 (unthrottled)", "> 0")
			}
			err = o.Rethrottle(r.Context(), id, *body.RequestsPerSecond)
		case "cleanup":
			var deleted string
			if deleted, err = o.Cleanup(r.Context(), id); err == nil {
				api.WriteJSON(w, http.StatusOK, map[string]any{"deleted": deleted})
				return nil
			}
		}
		if err != nil {
			return problem(err)
		}
		st, err := o.Status(r.Context(), id)
		if err != nil {
			return err
		}
		status := http.StatusOK
		if action == "run" || action == "rollback" {
			status = http.StatusAccepted
		}
		api.WriteJSON(w, status, st)
		return nil
	}, api.Body(api.MediaTypeJSON))
}

// ParseOptions decodes a start request: DefaultOptions overlaid with the
// JSON object, unknown fields refused, then validated. Errors are 400
// problems naming the field and its allowed values (for an unknown field,
// the fields of a start request), never Go type names.
func ParseOptions(raw []byte, aliases []string) (Options, error) {
	opts := DefaultOptions()
	if err := api.UnmarshalStrict(raw, &opts); err != nil {
		return Options{}, err
	}
	if err := opts.Validate(aliases); err != nil {
		return Options{}, problem(err)
	}
	return opts, nil
}

// Actions lists the actions of POST /admin/reindex/{id}/{action}.
func Actions() []string {
	return []string{"run", "pause", "resume", "rethrottle", "rollback", "cleanup"}
}

// problem maps the package's errors to problem bodies: a FieldError is a
// 400 naming the field, an unknown job 404, a busy alias or job 409, a wrong
// step 409; anything else is returned as is (a 500).
func problem(err error) error {
	var fe *FieldError
	switch {
	case errors.As(err, &fe):
		p := api.BadRequest(fe.Field, err.Error(), fe.Allowed)
		return p
	case errors.Is(err, ErrNotFound):
		return api.NewProblem(http.StatusNotFound, err.Error())
	case errors.Is(err, ErrBusy), errors.Is(err, ErrWrongStep):
		return api.NewProblem(http.StatusConflict, err.Error())
	}
	return err
}
