package web

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

//go:embed assets
var assets embed.FS

// pushInterval is how often the page gets the state (wall time).
const pushInterval = 500 * time.Millisecond

// maxBody bounds a control request's body.
const maxBody = 64 << 10

// Server serves the dashboard of one cluster.
type Server struct {
	watch *observer.Watcher
	ctl   *observer.Control
	log   *zap.Logger
	mux   *http.ServeMux
}

// New returns the dashboard's handler over a running watcher.
func New(w *observer.Watcher, ctl *observer.Control, log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{watch: w, ctl: ctl, log: log, mux: http.NewServeMux()}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /", http.FileServerFS(static))
	s.mux.HandleFunc("GET /api/state", s.state)
	s.mux.HandleFunc("GET /api/stream", s.stream)
	s.mux.HandleFunc("GET /api/strategy", s.getStrategy)
	s.mux.HandleFunc("POST /api/strategy", s.setStrategy)
	s.mux.HandleFunc("POST /api/jobs", s.submit)
	s.mux.HandleFunc("POST /api/kill", s.kill)
	s.mux.HandleFunc("GET /api/explain", s.explain)
	s.mux.HandleFunc("GET /api/help", s.help)
	return s
}

// ServeHTTP serves the page and its API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// view is the state as the page gets it: the last logLines lines only.
func (s *Server) view() observer.State {
	st := s.watch.State()
	const logLines = 60
	if n := len(st.Log); n > logLines {
		st.Log = st.Log[n-logLines:]
	}
	return st
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		// The NATS server refused it for the observer's credentials.
		code = http.StatusForbidden
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, s.view()) }

// stream pushes the state as server-sent events until the page goes away.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, errors.New("streaming unsupported"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	tick := time.NewTicker(pushInterval)
	defer tick.Stop()
	for {
		b, err := json.Marshal(s.view())
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", b); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

func readBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("body: %v", err)
	}
	return nil
}

func (s *Server) getStrategy(w http.ResponseWriter, r *http.Request) {
	rep, err := s.ctl.Strategy("")
	if err != nil {
		writeError(w, http.StatusBadGateway, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) setStrategy(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Policy string `json:"policy"`
		Queue  string `json:"queue"`
	}
	if err := readBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	rep, err := s.ctl.SetStrategy(events.StrategyRequest{Policy: req.Policy, Queue: req.Queue})
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	s.log.Info("strategy switched from the web", zap.String("policy", rep.Policy), zap.String("queue", rep.Queue))
	s.watch.Refresh()
	writeJSON(w, http.StatusOK, rep)
}

// submit passes the job spec (the JSON of job.submit) through; the
// scheduler validates it and names a bad field.
func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil || !json.Valid(b) {
		writeError(w, http.StatusBadRequest, errors.New("body: want the job spec as JSON"))
		return
	}
	rep, err := s.ctl.Submit(b)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	s.watch.Refresh()
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	var req struct {
		GPU string `json:"gpu"`
	}
	if err := readBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	rep, err := s.ctl.Kill(req.GPU)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	s.watch.Refresh()
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("job")
	if id == "" {
		writeError(w, http.StatusBadRequest, errors.New("job: give ?job=JOB_ID"))
		return
	}
	rep, err := s.ctl.Explain(id)
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	// The decision, and in words (cluster explain prints the same text:
	// observer.ExplainText) under the name the page knows the job by.
	name := r.URL.Query().Get("name")
	if name == "" {
		name = id
	}
	writeJSON(w, http.StatusOK, struct {
		events.Decision
		PinNote string `json:"pin_note,omitempty"`
		Text    string `json:"text"`
	}{rep, observer.PinNote(rep), observer.ExplainText(name, rep)})
}

// help serves the plain-English texts every element explains itself with
// (observer.HelpTexts): the page puts each in its element's hover.
func (s *Server) help(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(observer.HelpTexts())
}
