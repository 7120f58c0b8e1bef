package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
)

// ServeFile is the Unix socket, in a lab's folder, on which a lab that
// `faultline lab up` keeps running serves runs from other processes of
// its user (run --lab): mode 0600 in a folder of mode 0700, so no address
// is listened on and there are no credentials to copy.
const ServeFile = "serve.sock"

// RunRequest is a run a served lab carries out: the scenario file as read
// (the lab parses it again with the same --set values), where its
// artifacts go, and what the run's flags said.
type RunRequest struct {
	// Source names the scenario file, for messages; Text is its content.
	Source string `json:"source"`
	Text   []byte `json:"text"`
	// Sets are the --set values the scenario declares.
	Sets map[string]string `json:"sets,omitempty"`
	// Dir is the run folder, an absolute path; the lab writes the
	// artifacts there.
	Dir string `json:"dir"`
	// Timeout, when set, replaces spec.timeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Release, when set, replaces spec.lab.release (a suite's
	// E2E_RELEASE); it must be the served lab's.
	Release string `json:"release,omitempty"`
	DryRun  bool   `json:"dryRun,omitempty"`
	Retain  bool   `json:"retain,omitempty"`
	Seed    *int64 `json:"seed,omitempty"`
	// History is the folder of past results ("" none); Gate applies the
	// regression gate against it.
	History string `json:"history,omitempty"`
	Gate    bool   `json:"gate,omitempty"`
	// Faultline and Replay are recorded in the result (ExecuteInput).
	Faultline string   `json:"faultline,omitempty"`
	Replay    []string `json:"replay,omitempty"`
}

// NewRunRequest is the request to run sc as parsed with sets, of which it
// keeps those sc declares (the lab parses the file again with them), with
// its artifacts in dir; the run's other settings are the caller's to add.
func NewRunRequest(sc *scenario.Scenario, sets map[string]string, dir string) RunRequest {
	req := RunRequest{Source: sc.Source, Text: sc.Text, Sets: map[string]string{}, Dir: dir}
	for k, v := range sets {
		if _, declared := sc.Spec.Parameters[k]; declared {
			req.Sets[k] = v
		}
	}
	return req
}

// RunMessage is one message of a served run: from the lab, a line for
// people, the engine's progress or events, and at last Done (Error says
// why there is no result, or why its evidence is incomplete); from the
// run's process, Interrupt.
type RunMessage struct {
	Say       string           `json:"say,omitempty"`
	Progress  *engine.Progress `json:"progress,omitempty"`
	Event     *engine.Event    `json:"event,omitempty"`
	Done      bool             `json:"done,omitempty"`
	HasResult bool             `json:"hasResult,omitempty"`
	Error     string           `json:"error,omitempty"`
	// NotServed, with Done, says why the lab does not run the scenario
	// (it needs another release, or a lab of its own): the run's process
	// runs it on a lab of its own.
	NotServed string `json:"notServed,omitempty"`
	Interrupt string `json:"interrupt,omitempty"`
}

// Server serves runs on the lab of a session: each run leases a fresh
// cluster of the shape its scenario asks for (Pool.Lease; never one of
// the lab's own clusters, which stay as `lab up` started them), and when
// it ends the cluster goes and the lab prepares another of that shape, so
// the next run of it finds one Running.
type Server struct {
	pool *Pool
	// stock is how many clusters of a shape runs asked for the lab keeps
	// ready.
	stock int
	log   logr.Logger
}

// NewServer serves runs on s's lab, keeping n clusters ready of each shape
// runs ask for (at least 1), starting with shape stock.
func NewServer(ctx context.Context, s *Session, stock scenario.LabSpec, n int, log logr.Logger) (*Server, error) {
	n = max(n, 1)
	if s.Lab == nil {
		return nil, errors.New("serve runs: the session has no lab")
	}
	// first holds the lab's release, for Lease's check; it serves no
	// run (used), as the lab's own clusters are not leased. The clusters
	// kept ready are of its shape, release named: a scenario that names
	// none is given it (adopt), and so leases them.
	first := stock
	first.Release = lab.ParseRelease(s.Lab.Stack().Name)
	p := &Pool{warm: s, first: first, used: true}
	if err := s.Lab.Stock(ctx, lab.ClusterName, first, n); err != nil {
		return nil, fmt.Errorf("serve runs: prepare clusters: %w", err)
	}
	return &Server{pool: p, stock: n, log: log}, nil
}

// Listen is the socket of the lab in dir (ServeFile), for Serve; the
// folder is made the user's alone.
func Listen(dir string) (net.Listener, error) {
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("serve runs: %w", err)
	}
	path := filepath.Join(dir, ServeFile)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("serve runs: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("serve runs: %w", err), l.Close())
	}
	return l, nil
}

// Serve serves the runs l accepts until ctx ends; a run under way when it
// does is interrupted, its faults undone, before Serve returns.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("serve runs: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			s.serve(ctx, conn)
		}()
	}
}

// serve carries out the run one connection asks for. The run is
// interrupted when the run's process says so, or its connection ends (the
// process died or cut its clean-up short): the lab undoes the faults
// either way.
func (s *Server) serve(ctx context.Context, conn net.Conn) {
	enc := &encoder{enc: json.NewEncoder(conn)}
	dec := json.NewDecoder(conn)
	var req RunRequest
	if err := dec.Decode(&req); err != nil {
		enc.send(RunMessage{Done: true, Error: fmt.Sprintf("read the run request: %v", err)})
		return
	}
	served := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		var m RunMessage
		for dec.Decode(&m) == nil && m.Interrupt == "" {
		}
		cause := "the run's process is gone"
		if m.Interrupt != "" {
			cause = m.Interrupt
		}
		cancel(errors.New(cause))
	}()
	res, giveBack, err := s.run(ctx, served, req, enc)
	m := RunMessage{Done: true, HasResult: res != nil}
	var ns *NotServedError
	switch {
	case errors.As(err, &ns):
		m.NotServed = ns.Why
	case err != nil:
		m.Error = err.Error()
	}
	enc.send(m)
	// The run's process has its result; the cluster goes after.
	if giveBack != nil {
		giveBack()
	}
}

// run leases a cluster for req's scenario and runs it there; the function
// it returns gives the cluster back, within served (the lab serving: a run
// interrupted still gives its cluster back, a lab that stops does not
// wait for it).
func (s *Server) run(ctx, served context.Context, req RunRequest, enc *encoder) (*engine.Result, func(), error) {
	sc, err := scenario.Parse(req.Source, req.Text, req.Sets, engine.Vocabulary)
	if err != nil {
		return nil, nil, err
	}
	if err := s.adopt(sc, req); err != nil {
		return nil, nil, err
	}
	var history *artifacts.History
	if req.History != "" && !req.DryRun {
		if history, err = artifacts.OpenHistory(req.History); err != nil {
			return nil, nil, err
		}
		say := sayTo(enc)
		history.Warn = func(s string) { fmt.Fprintln(say, "warning:", s) }
	}
	sess, give, err := s.pool.lease(ctx, sc, sayTo(enc))
	if err != nil {
		return nil, nil, err
	}
	shape := *sc.Spec.Lab
	// The cluster goes, and the lab prepares another of its shape, once
	// the run is over: neither takes the run's CPU.
	giveBack := func() {
		rctx, cancel := context.WithTimeout(served, lab.RemoveTimeout)
		defer cancel()
		if err := give(rctx); err != nil {
			s.log.Error(err, "return a served run's cluster")
		}
		if err := sess.Lab.Stock(rctx, lab.ClusterName, shape, s.stock); err != nil {
			s.log.Error(err, "prepare a cluster for the next run")
		}
	}
	res, err := Execute(ctx, ExecuteInput{
		Dir: req.Dir, Profile: sess.Profile, Log: s.log, History: history, Gate: req.Gate,
		Faultline: req.Faultline, Replay: req.Replay,
		Run: engine.RunInput{
			Scenario: sc, Provider: sess.Provider, Parameters: req.Sets, Retain: req.Retain, DryRun: req.DryRun, Seed: req.Seed,
			Progress: func(p engine.Progress) { enc.send(RunMessage{Progress: &p}) },
			OnEvent:  func(e engine.Event) { enc.send(RunMessage{Event: &e}) },
			Log:      s.log,
		},
	})
	return res, giveBack, err
}

// encoder sends the messages of one connection, one at a time; the first
// that fails ends the sending (the run's process is gone).
type encoder struct {
	mu     sync.Mutex
	enc    *json.Encoder
	failed bool
}

func (e *encoder) send(m any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.failed && e.enc.Encode(m) != nil {
		e.failed = true
	}
}

// sayTo is a writer whose writes go to enc as lines for people.
func sayTo(enc *encoder) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		enc.send(RunMessage{Say: string(b)})
		return len(b), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// EnvNoServedLab, set to anything, keeps a run with no --provider and
// no --lab from going to the one running lab that serves runs (the tests
// set it: a developer's lab must not take their runs).
const EnvNoServedLab = "FAULTLINE_NO_SERVED_LAB"

// ServingLabs are the names of this user's running labs that serve runs.
func ServingLabs() ([]string, error) {
	records, err := servingRecords()
	var names []string
	for _, r := range records {
		names = append(names, r.Name())
	}
	return names, err
}

// servingRecords are the records of this user's running labs that serve
// runs.
func servingRecords() ([]lab.Record, error) {
	records, err := lab.Records()
	return slices.DeleteFunc(records, func(r lab.Record) bool {
		_, err := os.Stat(filepath.Join(r.Dir, ServeFile))
		return err != nil || !r.OwnerAlive()
	}), err
}

// ServedLab is the folder of the running lab named name (its folder's
// name, as `lab up` prints it) that serves runs; the error lists those
// that do.
func ServedLab(name string) (string, error) {
	records, err := servingRecords()
	if err != nil {
		return "", err
	}
	var serving []string
	for _, r := range records {
		if r.Name() == name {
			return r.Dir, nil
		}
		serving = append(serving, r.Name())
	}
	if len(serving) == 0 {
		return "", configErr("lab %q: no running lab serves runs; start one with 'faultline lab up'", name)
	}
	return "", configErr("lab %q: no such running lab; labs that serve runs: %v", name, serving)
}

// RunServed has the lab in labDir carry out req, handing on each message
// it sends until the run is done, and returns the run's result, read from
// req.Dir (nil when the run could not be carried out). When ctx ends the
// lab is asked to interrupt the run; it undoes the faults and the result
// says so. Closing the connection (abort) leaves the clean-up to the lab.
func RunServed(ctx, abort context.Context, labDir string, req RunRequest, on func(RunMessage)) (*engine.Result, error) {
	conn, err := net.Dial("unix", filepath.Join(labDir, ServeFile))
	if err != nil {
		return nil, fmt.Errorf("reach lab %s: %w", filepath.Base(labDir), err)
	}
	defer conn.Close()
	enc := &encoder{enc: json.NewEncoder(conn)}
	enc.send(req)
	stop := context.AfterFunc(ctx, func() { enc.send(RunMessage{Interrupt: context.Cause(ctx).Error()}) })
	defer stop()
	cut := context.AfterFunc(abort, func() { conn.Close() })
	defer cut()
	dec := json.NewDecoder(conn)
	for {
		var m RunMessage
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("lab %s: the run's connection ended before its result: %w", filepath.Base(labDir), err)
		}
		if !m.Done {
			on(m)
			continue
		}
		if m.NotServed != "" {
			return nil, &NotServedError{Why: m.NotServed}
		}
		if !m.HasResult {
			return nil, errors.New(m.Error)
		}
		res, err := artifacts.ReadResult(req.Dir)
		if err != nil {
			return nil, err
		}
		if m.Error != "" {
			return res, errors.New(m.Error)
		}
		return res, nil
	}
}
