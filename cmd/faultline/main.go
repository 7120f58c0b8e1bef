package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"

	"github.com/faultline-dev/faultline/session"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/providers/kind"
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func infraErr(err error) error { return &exitError{code: exitInfra, err: err} }

// exitCode is how a command ended without an error message to print.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

func main() {
	// Started in place of a lab's kube-apiserver or etcd, this process
	// becomes it here and never returns.
	lab.RunShim()
	// kind runs the first docker on PATH; on a host with quirks that is
	// faultline's shim (kind.ShimDir). Without a state folder there is no
	// kind cluster to make, and nothing to set.
	if state, err := kind.DefaultState(); err == nil {
		if err := os.Setenv("PATH", kind.ShimPATH(state, os.Getenv("PATH"))); err != nil {
			fmt.Fprintln(os.Stderr, "faultline: set PATH:", err)
			os.Exit(exitInfra)
		}
	}
	stop, err := startCPUProfile(os.Getenv(EnvCPUProfile))
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultline:", err)
		os.Exit(exitUsage)
	}
	code := execute(os.Args[1:], os.Stdout, os.Stderr)
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "faultline:", err)
	}
	os.Exit(code)
}

// EnvCPUProfile names a file for the process's CPU profile (go tool pprof
// reads it): what bounds a lab of 20 clusters, a slow scenario.
const EnvCPUProfile = "FAULTLINE_CPUPROFILE"

// startCPUProfile profiles the process into path, when set, until stop.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", EnvCPUProfile, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(fmt.Errorf("$%s: %w", EnvCPUProfile, err), f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("$%s: %w", EnvCPUProfile, err)
		}
		return nil
	}, nil
}

// atEnd are what a command set up for the process and execute undoes once
// it returns (the lab CA's folder). Tests run execute in parallel.
var atEnd struct {
	sync.Mutex
	funcs []func() error
}

// undoAtEnd adds f to what execute undoes once it returns.
func undoAtEnd(f func() error) {
	atEnd.Lock()
	defer atEnd.Unlock()
	atEnd.funcs = append(atEnd.funcs, f)
}

// execute runs the CLI and returns its exit code.
func execute(args []string, stdout, stderr io.Writer) int {
	defer func() {
		atEnd.Lock()
		funcs := atEnd.funcs
		atEnd.funcs = nil
		atEnd.Unlock()
		for _, f := range funcs {
			if err := f(); err != nil {
				fmt.Fprintln(stderr, "faultline:", err)
			}
		}
	}()
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	var code exitCode
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &ee):
		fmt.Fprintln(stderr, "faultline:", ee.err)
		return ee.code
	}
	// cobra's own errors: unknown flag, wrong number of arguments.
	fmt.Fprintln(stderr, "faultline:", err)
	return exitUsage
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "faultline",
		Short: "Disaster-scenario testing for Cluster API clusters on vSphere",
		Long: `faultline injects a fault (power off a VM, destroy it, disconnect its NIC),
watches the infrastructure and cluster react, and asserts recovery timing and
remediation behaviour. Every fault is journaled before it is applied and undone
at the end, on failure, on Ctrl-C, and by 'faultline recover' after a crash.

Exit codes: 0 pass (or skipped), 1 scenario failed, 2 invalid input or usage,
3 infrastructure error or interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("faultline {{.Version}}\n")
	// --version has no -v: on run and kind up, -v is the log verbosity,
	// and one letter meaning two things by where it stands misleads.
	root.Flags().Bool("version", false, "print faultline's version (as the version command does)")
	root.AddCommand(newDescribeCommand(), newRunCommand(), newValidateCommand(), newInitCommand(), newListCommand(), newRecoverCommand(), newVersionCommand(), newLabCommand(), newCheckCommand(), newReportCommand(), newHistoryCommand(), newCompareCommand(), newKindCommand(), newGenDocsCommand(), newReachCommand())
	registerCompletions(root)
	return root
}

// sessionErr maps an error of session.Open to an exit code: a
// configuration that cannot work is a usage error, anything else a
// failure to reach the infrastructure.
func sessionErr(err error) error {
	if ee := (*exitError)(nil); errors.As(err, &ee) {
		return err // the flags' own error, with its code
	}
	var ce *session.ConfigError
	if errors.As(err, &ce) {
		return &exitError{code: exitUsage, err: err}
	}
	return infraErr(err)
}

// notifyContext is ctx, cancelled by Ctrl-C (SIGINT), SIGTERM or a closed
// terminal or ssh session (SIGHUP): each ends a command the same way, its
// faults undone. After the first, a signal has its default effect (the
// process ends).
func notifyContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, _, stop := notifySignals(ctx, nil)
	return ctx, stop
}

// notifySignals is notifyContext for a command whose end has a clean-up:
// the first signal cancels ctx (the clean-up begins), the second cancels
// abort (it is cut short, what it did not undo left pending), and after
// that a signal has its default effect. say, when set, is told what each
// signal does.
func notifySignals(parent context.Context, say io.Writer) (ctx, abort context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	abort, cancelAbort := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
	signal.Notify(ch, signals...)
	done := make(chan struct{})
	go func() {
		defer signal.Stop(ch)
		for n := 1; ; n++ {
			var s os.Signal
			select {
			case s = <-ch:
			case <-done:
				return
			}
			cause := fmt.Errorf("%s signal received", s)
			if n == 1 {
				if say != nil {
					fmt.Fprintf(say, "faultline: %s: undoing what was injected; %s again cuts the clean-up short (what it has not undone stays pending for 'faultline recover')\n", cause, s)
				}
				cancel(cause)
				if say == nil {
					return
				}
				continue
			}
			if say != nil {
				fmt.Fprintf(say, "faultline: %s again: cutting the clean-up short\n", s)
			}
			cancelAbort(cause)
			return
		}
	}()
	return ctx, abort, func() {
		close(done)
		cancel(nil)
		cancelAbort(nil)
	}
}
