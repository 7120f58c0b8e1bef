package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestIntegrationLabUpDown starts `faultline lab up` in its own process,
// reads Machines through the kubeconfig it prints, and checks that a plain
// `lab down` leaves it alone while it runs, that `lab down NAME` stops it,
// and that after SIGKILL its kube-apiserver and etcd are gone within 5 s,
// a plain `lab down` lists it as left behind and `lab down --stale`
// removes its folder and what vcsim and envtest made for it in $TMPDIR
// (datastores, certificate, webhook serving key); the same after SIGKILL
// for a lab of another release, whose four manager processes die with it
// too.
func TestIntegrationLabUpDown(t *testing.T) {
	labtest.Require(t)
	bin := buildFaultline(t)
	cache := t.TempDir()
	// The lab records go to a cache of the test's own; the built
	// releases stay where they are.
	stackDir, err := lab.StackDir(lab.Stacks()[1])
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	env := append(os.Environ(), "XDG_CACHE_HOME="+cache, "FAULTLINE_RELEASES="+filepath.Dir(stackDir), "TMPDIR="+tmp)
	down := func(t *testing.T, args ...string) string {
		cmd := exec.Command(bin, append([]string{"lab", "down"}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lab down: %v\n%s", err, out)
		}
		return string(out)
	}
	for _, how := range []string{"lab-down", "sigkill", "sigkill-release"} {
		t.Run(how, func(t *testing.T) {
			args := []string{"lab", "up", "--control-planes", "1", "--workers", "1", "--pool", "1"}
			if how == "sigkill-release" {
				args = append(args, "--release", lab.Stacks()[1].Name)
			}
			up := exec.Command(bin, args...)
			up.Env = env
			stdout, err := up.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			up.Stderr = os.Stderr
			if err := up.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- up.Wait() }()
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var kubeconfig, dir string
			var exports, run []string
			deadline := time.After(4 * time.Minute)
		read:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatal("lab up ended before printing its kubeconfigs")
					}
					t.Log(l)
					if v, ok := strings.CutPrefix(l, "management kubeconfig: "); ok {
						kubeconfig, _, _ = strings.Cut(v, " ")
					}
					if v, ok := strings.CutPrefix(l, "export "); ok {
						exports = append(exports, v)
					}
					if v, ok := strings.CutPrefix(l, "  faultline run "); ok && run == nil {
						run = strings.Fields(v) // the first: --provider capi
					}
					if _, v, ok := strings.Cut(l, "folder "); ok && strings.HasPrefix(l, "lab up in") {
						dir = v
					}
					if strings.Contains(l, "Ctrl-C or 'faultline lab down") {
						break read
					}
				case <-deadline:
					_ = up.Process.Kill()
					t.Fatal("lab up did not come up within 4 minutes")
				}
			}
			later := &lockedBuffer{}
			go func() {
				for l := range lines {
					fmt.Fprintln(later, l)
				}
			}()
			// What `kubectl get machines -A` does from another shell.
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			scheme := runtime.NewScheme()
			if err := clusterv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				t.Fatal(err)
			}
			// The lab's own cluster; the one it keeps ready for runs
			// (--pool 1) is in a namespace of its own.
			var machines clusterv1.MachineList
			if err := c.List(context.Background(), &machines, client.InNamespace("default")); err != nil {
				t.Fatal(err)
			}
			if len(machines.Items) != 2 {
				t.Errorf("%d Machines, want 2", len(machines.Items))
			}
			// What it printed is all 'run --provider capi' needs: the
			// exports and the command line, here as a dry run.
			dryDir := t.TempDir()
			dry := exec.Command(bin, append(append([]string{"run"}, run...), "--dry-run", "--artifacts", dryDir)...)
			dry.Env = append(append([]string(nil), env...), exports...)
			if out, err := dry.CombinedOutput(); err != nil || len(exports) != 5 || !strings.Contains(string(out), "PASS (dry run: nothing was injected)") {
				t.Errorf("the printed command %v with %v: %v\n%s", run, exports, err, out)
			}
			// --provider capi names the release clusterctl's inventory
			// of the lab's management cluster records.
			want := lab.Stacks()[0]
			if how == "sigkill-release" {
				want = lab.Stacks()[1]
			}
			if res, err := artifacts.ReadResult(dryDir); err != nil || res.Release == nil || res.Release.ClusterAPI != want.ClusterAPI || res.Release.CAPV != want.CAPV {
				t.Errorf("--provider capi result.json release %+v (%v), want %s+%s", res, err, want.ClusterAPI, want.CAPV)
			}
			// lab wait returns once the pool is stocked, as lab up
			// then says.
			wait := exec.Command(bin, "lab", "wait", filepath.Base(dir), "--timeout", "3m")
			wait.Env = env
			if out, err := wait.CombinedOutput(); err != nil || !strings.Contains(string(out), "is ready to serve") {
				t.Errorf("lab wait: %v\n%s", err, out)
			}
			waitFor(t, 10*time.Second, "lab up says it is ready to serve", func() bool { return strings.Contains(later.String(), "ready to serve: 1 cluster(s) of") })
			// and how clusterctl reads it (TestIntegrationClusterctlPlan
			// runs clusterctl with it).
			clusterctl := "clusterctl upgrade plan --config " + filepath.Join(dir, "clusterctl", "clusterctl.yaml")
			waitFor(t, time.Minute, "lab up says how clusterctl reads the lab", func() bool { return strings.Contains(later.String(), clusterctl) })
			switch how {
			case "lab-down":
				runOnServedLab(t, bin, env, filepath.Base(dir), lab.Stacks()[0].Name, c)
			case "sigkill-release":
				// A lab of another release than the default serves
				// a scenario that names none on its own.
				runOnServedLab(t, bin, env, filepath.Base(dir), lab.Stacks()[1].Name, c)
			}
			// A plain `lab down` leaves a lab whose owner runs alone.
			name := filepath.Base(dir)
			if out := down(t); !strings.Contains(out, "lab "+name+" is in use by pid") {
				t.Errorf("lab down beside a live lab printed:\n%s", out)
			}
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("lab down removed a live lab's folder: %v", err)
			}
			select {
			case err := <-exited:
				t.Fatalf("lab down stopped a live lab it was not given: %v", err)
			default:
			}
			if strings.HasPrefix(how, "sigkill") {
				if how == "sigkill-release" {
					// Its managers run, and name the lab folder.
					if n := len(processesNaming(filepath.Join(dir, "managers"))); n != 4 {
						t.Errorf("%d processes name the managers' folder, want the 4 managers", n)
					}
				}
				_ = up.Process.Signal(syscall.SIGKILL)
				<-exited
				// kube-apiserver and etcd die with it (parentdeath.go).
				deadline := time.Now().Add(5 * time.Second)
				for len(processesNaming(dir)) > 0 && time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond)
				}
				if left := processesNaming(dir); len(left) > 0 {
					t.Errorf("5 s after SIGKILL, processes naming the lab folder are alive: %v", left)
				}
				if out := down(t); !strings.Contains(out, "lab "+name+": its owner") || !strings.Contains(out, "'faultline lab down --stale' removes the 1 left behind") {
					t.Errorf("a plain lab down after SIGKILL printed:\n%s", out)
				}
				if _, err := os.Stat(dir); err != nil {
					t.Fatalf("a plain lab down removed the folder: %v", err)
				}
				t.Log(down(t, "--stale"))
				for _, pattern := range []string{"govcsim-*", "vcsim-*", "envtest-serving-certs-*"} {
					if left, _ := filepath.Glob(filepath.Join(tmp, pattern)); len(left) > 0 {
						t.Errorf("left in $TMPDIR after lab down --stale: %v", left)
					}
				}
			}
			bystander := 0
			if how == "lab-down" {
				// A user's process whose command line names the lab
				// folder (less apiserver.log) is not the lab's; and a
				// client watching Machines does not hold the lab's stop.
				other := exec.Command("sh", "-c", "sleep 300", "sh", filepath.Join(dir, "apiserver.log"))
				if err := other.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
				bystander = other.Process.Pid
				wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
				if err != nil {
					t.Fatal(err)
				}
				w, err := wc.Watch(context.Background(), &clusterv1.MachineList{})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				began := time.Now()
				t.Log(down(t, name))
				select {
				case <-exited:
				case <-time.After(time.Minute):
					t.Fatal("lab up still running after lab down")
				}
				if took := time.Since(began); took > 5*time.Second {
					t.Errorf("with a watch attached the lab took %s to stop, want 5 s at most", took.Round(time.Millisecond))
				}
				if err := other.Process.Signal(syscall.Signal(0)); err != nil {
					t.Errorf("lab down stopped a process that only names the lab folder: %v", err)
				}
			}
			if left := slices.DeleteFunc(processesNaming(dir), func(pid int) bool { return pid == bystander }); len(left) > 0 {
				t.Errorf("processes naming %s left: %v", dir, left)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("lab folder %s still there: %v", dir, err)
			}
		})
	}
}

// processesNaming lists processes whose command line contains s: what
// the test looks for, never what faultline stops.
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

// A plain `lab down` lists a lab whose owner is gone and a record that
// is not one (torn, edited: it used to stop `lab down` for every lab),
// and removes nothing; `lab down --stale` removes both, with what the
// lab recorded making in $TMPDIR.
func TestLabDownStale(t *testing.T) {
	cache, tmp := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("TMPDIR", tmp)
	records, err := lab.RecordsDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "faultline-lab-7")
	home := filepath.Join(tmp, "govcsim-7")
	for _, d := range []string{records, dir, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// pid 0 is never a lab's owner.
	write(filepath.Join(records, "faultline-lab-7.json"), `{"dir":"`+dir+`","pid":0,"pidStart":1,"command":"faultline run","created":"2026-12-01T10:00:00Z"}`)
	write(filepath.Join(records, "torn.json"), `{"dir":"/tm`)
	write(filepath.Join(dir, "outside"), home+"\n")
	downExit := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := execute(append([]string{"lab", "down"}, args...), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	code, out := downExit()
	if code != 0 || !strings.Contains(out, "lab faultline-lab-7: its owner (pid 0, faultline run) is gone") || !strings.Contains(out, "torn.json: not a lab record") || !strings.Contains(out, "removes the 2 left behind") {
		t.Fatalf("lab down: exit %d:\n%s", code, out)
	}
	for _, kept := range []string{dir, home, filepath.Join(records, "torn.json")} {
		if _, err := os.Stat(kept); err != nil {
			t.Fatalf("a plain lab down removed %s", kept)
		}
	}
	if code, out := downExit("--stale", "faultline-lab-7"); code != exitUsage {
		t.Errorf("--stale with a name: exit %d, want %d:\n%s", code, exitUsage, out)
	}
	if code, out = downExit("--stale"); code != 0 {
		t.Fatalf("lab down --stale: exit %d:\n%s", code, out)
	}
	for _, gone := range []string{dir, home, filepath.Join(records, "torn.json"), filepath.Join(records, "faultline-lab-7.json")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there after --stale:\n%s", gone, out)
		}
	}
}

// TestLabWaitRefuses: lab wait names a lab that is not running, and
// refuses a timeout that is none.
func TestLabWaitRefuses(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"lab", "wait", "faultline-lab-1"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), `lab "faultline-lab-1": no such running lab`) {
		t.Errorf("no such lab: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := execute([]string{"lab", "wait", "x", "--timeout", "0s"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("--timeout 0s: exit %d, %q", code, stderr.String())
	}
}
