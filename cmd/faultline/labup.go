package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultline-dev/faultline/providers/session"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
)

// labState is what `lab up` leaves for `lab down`.
type labState struct {
	PID int    `json:"pid"`
	Dir string `json:"dir"`
}

// labStateFile is where `lab up` records itself: one lab at a time per user.
func labStateFile() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the cache folder for the lab state: %w", err)
	}
	return filepath.Join(dir, "faultline", "lab.json"), nil
}

func newLabUpCommand() *cobra.Command {
	var (
		flags         labFlags
		clusters      int
		controlPlanes int
		workers       int
		cpMHC         bool
		noWorkerMHC   bool
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the Cluster API lab and keep it running until Ctrl-C or 'faultline lab down'",
		Long: `Start the embedded Cluster API lab: a management cluster with the real Cluster
API and CAPV controllers, vcsim, and workload clusters run by the node
simulator. Prints the management and workload kubeconfigs and the vCenter
settings, so kubectl, govc and 'faultline run --provider capi' can use it from
another shell. Everything listens on 127.0.0.1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if clusters < 1 {
				return usageErr("--clusters %d: expected 1 or more", clusters)
			}
			stateFile, err := labStateFile()
			if err != nil {
				return infraErr(err)
			}
			if st, err := readLabState(stateFile); err == nil && processAlive(st.PID) {
				return usageErr("a lab is already running (pid %d, %s); stop it with 'faultline lab down'", st.PID, st.Dir)
			}
			cfg, err := flags.config(newLogger(cmd.ErrOrStderr(), 0))
			if err != nil {
				return err
			}
			if _, err := lab.FindAssets(flags.assets); err != nil {
				return usageErr("%v", err)
			}
			dir, err := os.MkdirTemp("", "faultline-lab-")
			if err != nil {
				return infraErr(err)
			}
			defer os.RemoveAll(dir)
			if err := writeLabState(stateFile, labState{PID: os.Getpid(), Dir: dir}); err != nil {
				return infraErr(err)
			}
			defer os.Remove(stateFile)

			ctx, stop := notifyContext(cmd.Context())
			defer stop()
			in := lab.Input{Assets: flags.assets, Dir: dir, Profile: cfg.Profile}
			for i := 1; i <= clusters; i++ {
				in.Clusters = append(in.Clusters, lab.ClusterSpec{
					Name: fmt.Sprintf("lab-%d", i),
					LabSpec: scenario.LabSpec{
						ControlPlanes: controlPlanes, Workers: workers, Nodes: flags.nodes,
						WorkerMHC: ptr.To(!noWorkerMHC), ControlPlaneMHC: ptr.To(cpMHC),
					},
				})
			}
			if err := in.Validate(); err != nil {
				return usageErr("%v", err)
			}
			cfg.Clusters, cfg.Dir = in.Clusters, dir
			return runLabUp(ctx, cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	flags.register(fs)
	fs.IntVar(&clusters, "clusters", 1, "number of workload clusters")
	fs.IntVar(&controlPlanes, "control-planes", 3, "control planes per cluster (odd)")
	fs.IntVar(&workers, "workers", 2, "workers per cluster")
	fs.BoolVar(&cpMHC, "control-plane-mhc", false, "add a MachineHealthCheck on the control plane")
	fs.BoolVar(&noWorkerMHC, "no-worker-mhc", false, "leave the workers without a MachineHealthCheck")
	return cmd
}

func runLabUp(ctx context.Context, cfg session.LabConfig, stdout, stderr io.Writer) error {
	started := time.Now()
	sess, err := session.Open(ctx, session.Config{Provider: session.ProviderLab, Lab: cfg})
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return sessionErr(err)
	}
	defer func() {
		fmt.Fprintln(stderr, "lab: stopping")
		if err := sess.Close(context.Background()); err != nil {
			fmt.Fprintln(stderr, "faultline:", err)
		}
	}()
	l := sess.Lab
	paths, err := l.WriteKubeconfigs(ctx)
	if err != nil {
		return infraErr(err)
	}
	vc := l.Sim().Config()
	fmt.Fprintf(stdout, "lab up in %s (%s time profile), folder %s\n", time.Since(started).Round(100*time.Millisecond), cfg.Profile.Name, l.Dir())
	fmt.Fprintf(stdout, "management kubeconfig: %s\n", paths[0])
	for i, c := range cfg.Clusters {
		fmt.Fprintf(stdout, "workload cluster %s kubeconfig: %s\n", c.Name, paths[i+1])
	}
	fmt.Fprintf(stdout, "GOVC_URL=%s\nGOVC_USERNAME=%s\nGOVC_PASSWORD=%s\nGOVC_TLS_CA_CERTS=%s\n", vc.URL, vc.Username, vc.Password, vc.CAFile)
	fmt.Fprintln(stdout, "Ctrl-C or 'faultline lab down' stops it.")
	<-ctx.Done()
	return nil
}

func newLabDownCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the lab 'faultline lab up' started, or clean up after one that crashed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stateFile, err := labStateFile()
			if err != nil {
				return infraErr(err)
			}
			st, err := readLabState(stateFile)
			if errors.Is(err, os.ErrNotExist) {
				fmt.Fprintln(cmd.OutOrStdout(), "no lab is running")
				return nil
			}
			if err != nil {
				return infraErr(err)
			}
			if err := labDown(st, cmd.OutOrStdout()); err != nil {
				return infraErr(err)
			}
			if err := removeIfExists(stateFile); err != nil {
				return infraErr(err)
			}
			return nil
		},
	}
}

// labDown stops `lab up` (SIGTERM, then SIGKILL after 30s); then, as after a
// crash, kills any process whose command line names the lab folder
// (kube-apiserver, etcd) and removes the folder.
func labDown(st labState, out io.Writer) error {
	if processAlive(st.PID) {
		fmt.Fprintf(out, "stopping lab (pid %d)\n", st.PID)
		_ = syscall.Kill(st.PID, syscall.SIGTERM)
		waitExit(st.PID, 30*time.Second)
		if processAlive(st.PID) {
			_ = syscall.Kill(st.PID, syscall.SIGKILL)
		}
	}
	for _, pid := range processesNaming(st.Dir) {
		fmt.Fprintf(out, "killing leftover process %d\n", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Its real nodes' containers and network, recorded in the folder as
	// they were made.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := lab.RemoveRealNodes(ctx, st.Dir); err != nil {
		return fmt.Errorf("remove the lab's real nodes: %w", err)
	}
	if err := os.RemoveAll(st.Dir); err != nil {
		return fmt.Errorf("remove lab folder %s: %w", st.Dir, err)
	}
	fmt.Fprintf(out, "lab down; removed %s\n", st.Dir)
	return nil
}

// waitExit waits until pid exits or the timeout passes, on a pidfd: the
// kernel says when, no polling.
func waitExit(pid int, timeout time.Duration) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already gone
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == nil && n > 0 {
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// processesNaming lists processes whose command line contains s.
func processesNaming(s string) []int {
	if s == "" {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie (exited, not yet reaped) counts as gone.
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) < 3 || fields[2] != "Z"
}

func readLabState(path string) (labState, error) {
	var st labState
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("lab state %s: %w", path, err)
	}
	return st, nil
}

func writeLabState(path string, st labState) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
