package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// managementScope is the scope of an object fault given no target: the
// management cluster, whose objects belong to no Machine.
var managementScope = providers.Object{Kind: "Cluster", Name: "management"}

// ref is how the journal records the run's provider.
func (r *run) ref() providers.ProviderRef {
	if d, ok := r.in.Provider.(providers.Describer); ok {
		return d.Ref()
	}
	return providers.ProviderRef{Name: r.in.Provider.Name()}
}

// recoverCommand is the command that undoes what the journal left
// pending: RunInput.RecoverCommand's, or a plain `faultline recover`.
func (r *run) recoverCommand() string {
	if r.in.RecoverCommand != nil {
		return r.in.RecoverCommand(r.in.Journal.Path(), r.ref())
	}
	return "faultline recover " + r.in.Journal.Path()
}

// inject journals and applies a fault to every object of the target, or
// once to the management cluster for a standalone object fault.
func (r *run) inject(ctx context.Context, step string, in scenario.Inject) error {
	def := faultCatalogue[in.Fault]
	params := in.Params
	if def.backups {
		params = maps.Clone(in.Params)
		if params == nil {
			params = map[string]string{}
		}
		params[paramBackups] = filepath.Join(r.backupDir(), step)
	}
	objs := r.faultObjects(in)
	// down are what each object's fault takes down with it, to watch.
	down := map[string][]providers.Object{}
	if def.onHost {
		hosts, err := hostsOf(ctx, r.in.Provider, objs)
		if err != nil {
			return &providers.InfraError{Err: fmt.Errorf("inject %s: %w", in.Fault, err)}
		}
		objs = nil
		for _, h := range hosts {
			objs = append(objs, h.host)
			down[h.host.ID] = h.down
		}
	}
	for _, obj := range objs {
		id := step + "/" + obj.Name
		f, err := r.journalFault(step, id, in.Fault, obj, def.undo(obj, params))
		if err != nil {
			return err
		}
		if def.injectStaged != nil {
			err = def.injectStaged(ctx, r.in.Provider, obj, params, r.stages(in.Fault, id, obj))
		} else {
			err = def.inject(ctx, r.in.Provider, obj, params)
		}
		now := time.Now()
		if err != nil {
			r.tl.Record(r.in.Provider.Name(), obj.String(), "fault-failed", map[string]string{"fault": in.Fault, "id": id, "error": err.Error()})
			err = &providers.InfraError{Err: fmt.Errorf("inject %s into %s: %w", in.Fault, obj, err)}
			if refused(def, err) {
				// Refused before anything changed: there is nothing to
				// undo, and undoing would act on a state another hand
				// made (a VM someone else powered off).
				return errors.Join(err, r.closeFault(f, ResultNotApplied, err.Error()))
			}
			// The fault may have half-applied; its undo stays pending and
			// runs at clean-up like any other.
			return err
		}
		r.tl.markInjected(now)
		r.tl.Record(r.in.Provider.Name(), obj.String(), "fault-injected", map[string]string{"fault": in.Fault, "id": id})
		if f.undo.Action == "vm.power-on" {
			r.watchPower(obj, f, byOwner)
		}
		if def.poweredOnBy != "" {
			for _, o := range down[obj.ID] {
				r.watchPower(o, f, def.poweredOnBy)
			}
		}
		r.mu.Lock()
		f.result.InjectedAt = &now
		if r.firstInject.IsZero() {
			r.firstInject = now
		}
		r.setAnchorLocked(scenario.InjectAnchor(step), now)
		r.setAnchorLocked(scenario.AnchorInject, now)
		r.mu.Unlock()
	}
	return nil
}

// backupDir is the folder of the run's backups.
func (r *run) backupDir() string {
	if r.in.BackupDir != "" {
		return r.in.BackupDir
	}
	return filepath.Join(filepath.Dir(r.in.Journal.Path()), "backups")
}

// activeFault is a fault a run journaled, until it is closed.
type activeFault struct {
	step   string
	result *FaultResult
	undo   UndoAction
	done   bool
	// undoing: faultline began undoing it.
	undoing bool
	// workload names the workload this is the deployment of: no fault of
	// the scenario's, so undo all leaves it.
	workload string
}

// journalFault journals a fault on obj before it is applied, and keeps it
// pending until it is undone.
func (r *run) journalFault(step, id, kind string, obj providers.Object, undo UndoAction) (*activeFault, error) {
	f := &activeFault{step: step, undo: undo, result: &FaultResult{ID: id, Kind: kind, Target: obj.String(), Undo: undo.Action, Note: undo.Note}}
	target := obj
	if err := r.in.Journal.Append(JournalEntry{Op: OpInject, FaultID: id, Scenario: r.res.Scenario, Kind: kind, Target: &target, Undo: &undo, Provider: r.ref()}); err != nil {
		return nil, fmt.Errorf("journal fault %s before applying it (nothing was applied): %w", id, err)
	}
	r.mu.Lock()
	r.faults = append(r.faults, f)
	r.mu.Unlock()
	r.tl.Record("journal", obj.String(), "fault-journaled", map[string]string{"fault": kind, "id": id, "undo": undo.Action})
	return f, nil
}

// applyJournaled journals and applies the deployment of a workload: an
// object.apply that sets no anchor, since it is no fault of the
// scenario's. Half applied, it stays pending and is undone at the end.
func (r *run) applyJournaled(ctx context.Context, id, kind string, scope providers.Object, params map[string]string, workload string) error {
	def := faultCatalogue[kind]
	f, err := r.journalFault(id, id, kind, scope, def.undo(scope, params))
	if err != nil {
		return err
	}
	r.mu.Lock()
	f.workload, f.result.Workload = workload, workload
	r.mu.Unlock()
	if err := def.inject(ctx, r.in.Provider, scope, params); err != nil {
		r.tl.Record(r.in.Provider.Name(), scope.String(), "fault-failed", map[string]string{"fault": kind, "id": id, "error": err.Error()})
		return &providers.InfraError{Err: fmt.Errorf("apply %s into %s: %w", id, scope, err)}
	}
	now := time.Now()
	r.mu.Lock()
	f.result.InjectedAt = &now
	r.mu.Unlock()
	r.tl.Record(r.in.Provider.Name(), scope.String(), "workload-applied", map[string]string{"id": id})
	return nil
}

// stages is how a long fault (an upgrade) reports its stages: each is a
// timeline event and a progress line.
func (r *run) stages(fault, id string, obj providers.Object) func(string) {
	start := time.Now()
	return func(stage string) {
		r.tl.Record(r.in.Provider.Name(), obj.String(), "fault-stage", map[string]string{"fault": fault, "id": id, "stage": stage})
		if r.in.Progress != nil {
			r.in.Progress(Progress{Waiting: fault + ": " + stage, Elapsed: time.Since(start)})
		}
	}
}

// undoStep undoes one inject step's faults, or all pending ones.
func (r *run) undoStep(ctx context.Context, name string, u scenario.UndoStep) error {
	var errs []error
	for _, f := range r.pendingFaults() {
		if (u.All && f.workload == "") || f.step == u.Fault {
			errs = append(errs, r.undoFault(ctx, f, false))
		}
	}
	r.mu.Lock()
	r.setAnchorLocked(scenario.UndoAnchor(name), time.Now())
	r.mu.Unlock()
	return errors.Join(errs...)
}

func (r *run) pendingFaults() []*activeFault {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*activeFault
	for i := len(r.faults) - 1; i >= 0; i-- { // newest first
		if !r.faults[i].done {
			out = append(out, r.faults[i])
		}
	}
	return out
}

// undoFault undoes f. Cut short by ctx, an undo step's undo is left to the
// clean-up; the clean-up's own (final) is a failure, pending for recover.
func (r *run) undoFault(ctx context.Context, f *activeFault, final bool) error {
	r.mu.Lock()
	f.undoing = true // a power-on from here on is faultline's own (watchPower)
	r.mu.Unlock()
	err := RunUndo(ctx, r.in.Provider, f.undo)
	note := ""
	if errors.Is(err, ErrNothingToUndo) {
		note, err = err.Error(), nil
	}
	result := ResultUndone
	if f.undo.Action == UndoNone {
		result = ResultNone
	}
	if cut := cutShort(ctx, err, false); cut != "" && !final {
		// Cut short, not failed: what it started may still land (a
		// power-on task in flight); the clean-up undoes it again and
		// finds it done.
		r.tl.Record(r.in.Provider.Name(), f.result.Target, "undo-cut", map[string]string{"id": f.result.ID, "cut": string(cut)})
		return fmt.Errorf("undo %s: %w", f.result.ID, errCut{cut})
	}
	if err != nil {
		// The inject record stays pending: recover will try again.
		r.tl.Record(r.in.Provider.Name(), f.result.Target, "undo-failed", map[string]string{"id": f.result.ID, "error": err.Error()})
		r.mu.Lock()
		f.result.Result = ResultFailed
		r.mu.Unlock()
		if ctx.Err() != nil {
			err = fmt.Errorf("%v: %w", context.Cause(ctx), err)
		}
		// Flattened: the verdict keeps it even when a signal is what
		// cut it short.
		return &providers.InfraError{Err: fmt.Errorf("%v (still pending in journal %s; undo it with: %s)", err, r.in.Journal.Path(), r.recoverCommand())}
	}
	if jerr := r.in.Journal.Append(r.doneEntry(f, result)); jerr != nil {
		err = fmt.Errorf("fault %s was undone but the journal could not record it: %w", f.result.ID, jerr)
	}
	now := time.Now()
	r.mu.Lock()
	f.done = true
	if result == ResultUndone {
		f.result.UndoneAt = &now
	}
	f.result.Result = result
	if note != "" {
		f.result.Note = note
	}
	r.mu.Unlock()
	details := map[string]string{"id": f.result.ID, "undo": f.undo.Action}
	if note != "" {
		details["note"] = note
	}
	r.tl.Record(r.in.Provider.Name(), f.result.Target, "fault-undone", details)
	return err
}

// refused tells whether a fault's inject failed before it changed
// anything: the provider lacks what it needs, the target is gone, or it is
// not in a state the fault applies to (a VM already off). Object faults
// write several objects and may have half-applied whatever the error.
func refused(def faultDef, err error) bool {
	return !def.backups && (errors.Is(err, providers.ErrUnsupported) || errors.Is(err, providers.ErrNotFound) || errors.Is(err, providers.ErrInvalidState))
}

// doneEntry is the journal record that closes f with result.
func (r *run) doneEntry(f *activeFault, result string) JournalEntry {
	return JournalEntry{Op: OpDone, FaultID: f.result.ID, Provider: providers.ProviderRef{Name: r.in.Provider.Name()}, Result: result}
}

// closeFault journals f as ended with result, undoing nothing.
func (r *run) closeFault(f *activeFault, result, why string) error {
	err := r.in.Journal.Append(r.doneEntry(f, result))
	r.mu.Lock()
	f.done = true
	f.result.Result = result
	f.result.Note = why
	r.mu.Unlock()
	r.tl.Record("journal", f.result.Target, "fault-closed", map[string]string{"id": f.result.ID, "result": result})
	return err
}

// undoPending undoes every fault still in place, newest first, under a
// context that survives the caller's cancellation (Ctrl-C, timeout).
func (r *run) undoPending(ctx context.Context) {
	pending := r.pendingFaults()
	if len(pending) == 0 {
		return
	}
	if r.in.Retain {
		for _, f := range pending {
			r.mu.Lock()
			f.done = true
			f.result.Result = ResultRetained
			r.mu.Unlock()
			r.tl.Record("runner", f.result.Target, "fault-retained", map[string]string{"id": f.result.ID})
		}
		return
	}
	budget := r.in.CleanupTimeout
	if budget <= 0 {
		budget = CleanupTimeout
	}
	cctx, abort := context.WithCancelCause(context.WithoutCancel(ctx))
	defer abort(nil)
	cctx, cancel := context.WithTimeoutCause(cctx, budget, fmt.Errorf("the clean-up's deadline, %s, passed", budget))
	defer cancel()
	if r.in.Abort != nil {
		stop := context.AfterFunc(r.in.Abort, func() { abort(errors.New("the clean-up was cut short (a second signal)")) })
		defer stop()
	}
	started := time.Now()
	for _, f := range pending {
		done := r.progressWhile(cctx, "clean-up: undo "+f.result.ID, started, budget)
		err := r.undoFault(cctx, f, true)
		done()
		if err != nil {
			r.errs = append(r.errs, err)
		}
	}
}

// progressWhile reports waiting for what every second until the returned
// function is called.
func (r *run) progressWhile(ctx context.Context, what string, started time.Time, budget time.Duration) func() {
	if r.in.Progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				r.in.Progress(Progress{Waiting: what, Elapsed: time.Since(started), Budget: budget})
			}
		}
	}()
	return cancel
}

// collectFaults copies the fault results, in injection order, into the
// result.
func (r *run) collectFaults() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.faults {
		r.res.Faults = append(r.res.Faults, *f.result)
	}
}

// faultObjects are the objects an inject step applies its fault to, once
// each.
func (r *run) faultObjects(in scenario.Inject) []providers.Object {
	objects := r.objects[in.Target]
	switch def := faultCatalogue[in.Fault]; {
	case in.Target == "":
		return []providers.Object{managementScope} // a standalone object fault, or an upgrade
	case def.perCluster:
		return oneForEachCluster(objects, "workload")
	case def.standalone:
		// An object fault's target only picks the cluster its objects
		// land in: one manifest is one set of objects, however many
		// Machines the target holds.
		return oneForEachCluster(objects, paramCluster(in.Params))
	}
	return objects
}

// oneForEachCluster keeps the first of objs for each cluster an object
// fault's objects would land in: the management cluster is one for all;
// a workload cluster is the one each object belongs to.
func oneForEachCluster(objs []providers.Object, cluster string) []providers.Object {
	seen := map[string]bool{}
	var out []providers.Object
	for _, o := range objs {
		key := "management"
		if cluster != "management" {
			key = o.Attributes[providers.AttrNamespace] + "/" + o.Attributes[providers.AttrCluster]
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, o)
		}
	}
	return out
}
