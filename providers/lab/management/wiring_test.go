package management

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"
	capvfeature "sigs.k8s.io/cluster-api-provider-vsphere/feature"
	"sigs.k8s.io/cluster-api/feature"
)

// The wiring test reads the compiled release's four main.go files from
// the module cache and this package's own wiring with one reader: what
// each registers (controllers, webhooks, CRD migrations, scheme), with
// the fields it sets and the concurrency it gives. Every difference must
// be one of labconfig.InProcess or a field the managers leave at its zero
// value by default (unsetByDefault).

// mainGo are the files and functions each manager wires itself in.
var mainGo = []struct {
	module, file string
	funcs        []string
}{
	{"sigs.k8s.io/cluster-api", "main.go", []string{"init", "setupReconcilers", "setupWebhooks"}},
	{"sigs.k8s.io/cluster-api", "controlplane/kubeadm/main.go", []string{"init", "setupReconcilers", "setupWebhooks"}},
	{"sigs.k8s.io/cluster-api", "bootstrap/kubeadm/main.go", []string{"init", "setupReconcilers", "setupWebhooks"}},
	// govmomi mode; main holds the CRD migrator, setupSupervisorControllers
	// the supervisor mode the lab does not run; its manager package the
	// scheme.
	{"sigs.k8s.io/cluster-api-provider-vsphere", "main.go", []string{"main", "setupVAPIControllers"}},
	{"sigs.k8s.io/cluster-api-provider-vsphere", "pkg/manager/manager.go", []string{"New"}},
}

// schemeFuncs are the functions whose AddToScheme calls are the
// manager's scheme (CAPV's main adds vm-operator's to a scheme of its
// own, for supervisor mode).
var schemeFuncs = []string{"init", "New", "newScheme"}

// supervisorOnly are the packages of CAPV's supervisor mode, which the
// lab does not run: their objects are neither migrated nor in its scheme.
var supervisorOnly = []string{"/api/supervisor/", "/apis/vmware/", "github.com/vmware-tanzu/", "/internal/apis/topology/", "/pkg/conversion/api/vmoperator/"}

// aliases are internal packages of a release and the public ones that
// re-export their types, which the compiled stack imports.
var aliases = map[string]string{
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/internal/webhooks": "sigs.k8s.io/cluster-api/bootstrap/kubeadm/webhooks",
}

// unsetByDefault are reconciler fields the managers set from flags or
// gates whose defaults leave them at their zero value.
var unsetByDefault = map[string]string{
	"WatchFilterValue":                 "--watch-filter is empty by default",
	"RuntimeClient":                    "nil unless the RuntimeSDK gate (Alpha, off by default) is on",
	"AdditionalSyncMachineLabels":      "--additional-sync-machine-labels is empty by default",
	"AdditionalSyncMachineAnnotations": "--additional-sync-machine-annotations is empty by default",
	"SkipCRDMigrationPhases":           "--skip-crd-migration-phases is empty by default",
}

// A wiring is what a set of files registers, by fact ("controller
// sigs.k8s.io/cluster-api/controllers.MachineSetReconciler"), with what
// it says of it (fields, options).
type wiring map[string]string

func TestInProcessWiringMatchesMainGo(t *testing.T) {
	t.Parallel()
	upstream := wiring{}
	for _, m := range mainGo {
		dir := moduleDir(t, m.module)
		readWiring(t, filepath.Join(dir, m.file), m.funcs, upstream)
	}
	ours := wiring{}
	readWiring(t, "wiring.go", []string{"addWebhooks", "addControllers", "crdMigrations"}, ours)
	readWiring(t, "plane.go", []string{"newScheme"}, ours)

	var diffs []string
	for _, fact := range slices.Sorted(maps.Keys(upstream)) {
		want := upstream[fact]
		got, ok := ours[fact]
		switch {
		case strings.HasPrefix(fact, "gated "):
			// Registered under a gate: the compiled stack must have it
			// when the gate is on by default.
			gate, inner, _ := strings.Cut(strings.TrimPrefix(fact, "gated "), " ")
			want := upstream[fact]
			if gateDefault(t, gate) {
				if g, ok := ours[inner]; !ok || g != want {
					diffs = append(diffs, fmt.Sprintf("%s (gate %s, on by default): main.go %q, in-process %q", inner, gate, want, g))
				}
			}
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: main.go %q, in-process lacks it", fact, want))
		case got != want:
			diffs = append(diffs, fmt.Sprintf("%s: main.go %q, in-process %q", fact, want, got))
		}
	}
	for fact := range ours {
		if _, ok := upstream[fact]; ok {
			continue
		}
		if _, ok := upstream[gatedAs(upstream, fact)]; ok {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s: in-process only (%q)", fact, ours[fact]))
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
	if len(diffs) > 0 {
		t.Log("the compiled stack must wire what the release's main.go files wire; a difference made on purpose goes into labconfig.InProcess and this test")
	}
	// The reader must have found the wiring it checks: a main.go that
	// moved its setup elsewhere would otherwise pass with nothing read.
	for _, must := range []string{
		"controller sigs.k8s.io/cluster-api/controllers.MachineSetReconciler",
		"controller sigs.k8s.io/cluster-api/controllers.ClusterResourceSetReconciler",
		"controller sigs.k8s.io/cluster-api/controlplane/kubeadm/controllers.KubeadmControlPlaneReconciler",
		"add sigs.k8s.io/cluster-api-provider-vsphere/controllers.AddVSphereDeploymentZoneControllerToManager",
		"webhook sigs.k8s.io/cluster-api-provider-vsphere/webhooks.VSphereVM",
		"migrate sigs.k8s.io/cluster-api/api/core/v1beta2.Machine",
		"scheme sigs.k8s.io/cluster-api/api/addons/v1beta2",
	} {
		if _, ok := upstream[must]; !ok {
			t.Errorf("read nothing of %s in the release's main.go files: the reader no longer follows them", must)
		}
	}
}

// gatedAs is the gated fact of upstream that fact is, "" if none.
func gatedAs(upstream wiring, fact string) string {
	for f := range upstream {
		if strings.HasPrefix(f, "gated ") && strings.HasSuffix(f, " "+fact) {
			return f
		}
	}
	return ""
}

func moduleDir(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}

// gateDefault is a Cluster API or CAPV gate's default ("pkg.Name").
func gateDefault(t *testing.T, gate string) bool {
	t.Helper()
	i := strings.LastIndex(gate, ".")
	pkg, name := gate[:i], gate[i+1:]
	var all map[featuregate.Feature]featuregate.FeatureSpec
	switch pkg {
	case "sigs.k8s.io/cluster-api/feature":
		all = feature.MutableGates.GetAll()
	case "sigs.k8s.io/cluster-api-provider-vsphere/feature":
		all = capvfeature.MutableGates.GetAll()
	}
	spec, ok := all[featuregate.Feature(name)]
	if !ok {
		t.Fatalf("gate %s: not a gate of Cluster API or CAPV", gate)
	}
	return spec.Default
}

// readWiring adds what funcs (functions, or package-level variables) of
// file register to w.
func readWiring(t *testing.T, file string, funcs []string, w wiring) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	r := &wiringReader{imports: map[string]string{}, flags: map[string]string{}, w: w}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		r.imports[name] = path
	}
	// The flags' defaults: fs.IntVar(&v, "name", default, usage).
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && len(c.Args) >= 3 {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && strings.HasSuffix(sel.Sel.Name, "Var") {
				if u, ok := c.Args[0].(*ast.UnaryExpr); ok {
					if id, ok := u.X.(*ast.Ident); ok {
						r.flags[id.Name] = r.render(c.Args[2])
					}
				}
			}
		}
		return true
	})
	found := 0
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if slices.Contains(funcs, d.Name.Name) {
				found++
				r.scheme = slices.Contains(schemeFuncs, d.Name.Name)
				r.walk(d.Body, "")
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if v, ok := s.(*ast.ValueSpec); ok && slices.Contains(funcs, v.Names[0].Name) {
					found++
					r.scheme = false
					for _, val := range v.Values {
						r.walk(val, "")
					}
				}
			}
		}
	}
	if found != len(funcs) {
		t.Fatalf("%s: found %d of %v", file, found, funcs)
	}
}

type wiringReader struct {
	// scheme: the function read builds the manager's scheme.
	scheme  bool
	imports map[string]string
	flags   map[string]string
	w       wiring
}

// walk reads n; gate is the feature gate n runs under ("" for none).
func (r *wiringReader) walk(n ast.Node, gate string) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt:
			if g := r.gateOf(n.Cond); g != "" {
				if n.Init != nil {
					r.walk(n.Init, gate)
				}
				r.walk(n.Body, g)
				return false
			}
		case *ast.CallExpr:
			r.call(n, gate)
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				// newScheme lists the AddToScheme functions as values.
				if sel, ok := e.(*ast.SelectorExpr); ok && sel.Sel.Name == "AddToScheme" {
					r.addScheme(sel.X, gate)
				}
			}
			if r.isMigrations(n.Type) {
				for _, e := range n.Elts {
					kv := e.(*ast.KeyValueExpr)
					r.migration(kv.Key, kv.Value, gate)
				}
				return false
			}
		case *ast.AssignStmt:
			// crdMigratorConfig[&pkg.Type{}] = crdmigrator.ByObjectConfig{...}
			if ix, ok := n.Lhs[0].(*ast.IndexExpr); ok && len(n.Rhs) == 1 {
				if cl, ok := n.Rhs[0].(*ast.CompositeLit); ok && r.render(cl.Type) == "sigs.k8s.io/cluster-api/controllers/crdmigrator.ByObjectConfig" {
					r.migration(ix.Index, cl, gate)
					return false
				}
			}
		}
		return true
	})
}

// gateOf is the gate cond tests, feature.Gates.Enabled(feature.X).
func (r *wiringReader) gateOf(cond ast.Expr) string {
	c, ok := cond.(*ast.CallExpr)
	if !ok || len(c.Args) != 1 || !strings.HasSuffix(r.render(c.Fun), "/feature.Gates.Enabled") {
		return ""
	}
	return r.render(c.Args[0])
}

func (r *wiringReader) add(fact, gate, says string) {
	if gate != "" {
		fact = "gated " + gate + " " + fact
	}
	r.w[fact] = says
}

func (r *wiringReader) call(c *ast.CallExpr, gate string) {
	switch fun := c.Fun.(type) {
	case *ast.SelectorExpr:
		switch {
		case fun.Sel.Name == "SetupWithManager" || fun.Sel.Name == "SetupWebhookWithManager":
			p, ok := fun.X.(*ast.ParenExpr)
			if !ok {
				return
			}
			u, ok := p.X.(*ast.UnaryExpr)
			if !ok {
				return
			}
			cl, ok := u.X.(*ast.CompositeLit)
			if !ok {
				return
			}
			kind := "controller"
			if fun.Sel.Name == "SetupWebhookWithManager" {
				kind = "webhook"
			}
			var opts string
			if kind == "controller" && len(c.Args) >= 3 {
				opts = " options " + r.render(c.Args[2])
			}
			r.add(kind+" "+r.render(cl.Type), gate, "fields "+r.fields(cl)+opts)
		case strings.HasPrefix(fun.Sel.Name, "Add") && strings.HasSuffix(fun.Sel.Name, "ToManager") && r.isPackage(fun.X):
			r.add("add "+r.render(fun), gate, "options "+r.render(c.Args[len(c.Args)-1]))
		case fun.Sel.Name == "AddToScheme":
			r.addScheme(fun.X, gate)
		}
	}
}

// addScheme adds pkg, whose AddToScheme is called or listed.
func (r *wiringReader) addScheme(pkg ast.Expr, gate string) {
	id, ok := pkg.(*ast.Ident)
	if !ok || !r.scheme {
		return
	}
	path := r.imports[id.Name]
	if path == "" || isSupervisorOnly(path) {
		return
	}
	r.add("scheme "+path, gate, "")
}

// isPackage tells whether e names an imported package.
func (r *wiringReader) isPackage(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && r.imports[id.Name] != ""
}

func isSupervisorOnly(path string) bool {
	return slices.ContainsFunc(supervisorOnly, func(p string) bool { return strings.Contains(path, p) })
}

func (r *wiringReader) isMigrations(t ast.Expr) bool {
	m, ok := t.(*ast.MapType)
	return ok && r.render(m.Value) == "sigs.k8s.io/cluster-api/controllers/crdmigrator.ByObjectConfig"
}

// migration adds a CRD migration of key (&pkg.Type{}) with config val;
// CAPV's supervisor-mode objects are left out with their mode.
func (r *wiringReader) migration(key, val ast.Expr, gate string) {
	obj := r.render(key.(*ast.UnaryExpr).X.(*ast.CompositeLit).Type)
	if isSupervisorOnly(obj) {
		return
	}
	r.add("migrate "+obj, gate, r.fields(val.(*ast.CompositeLit)))
}

// fields are a composite literal's keys, with the values of those that
// are constants (UseCache: false), sorted.
func (r *wiringReader) fields(cl *ast.CompositeLit) string {
	var out []string
	for _, e := range cl.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		k := kv.Key.(*ast.Ident).Name
		if _, ok := unsetByDefault[k]; ok {
			continue
		}
		if id, ok := kv.Value.(*ast.Ident); ok && (id.Name == "true" || id.Name == "false") {
			k += "=" + id.Name
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// render is e as source, with package names as import paths, flag
// variables as their defaults, and concurrency(n) as the options it
// makes.
func (r *wiringReader) render(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		if d, ok := r.flags[e.Name]; ok {
			return d
		}
		return e.Name
	case *ast.BasicLit:
		return e.Value
	case *ast.SelectorExpr:
		if id, ok := e.X.(*ast.Ident); ok {
			if path, ok := r.imports[id.Name]; ok {
				if a, ok := aliases[path]; ok {
					path = a
				}
				return path + "." + e.Sel.Name
			}
		}
		return r.render(e.X) + "." + e.Sel.Name
	case *ast.BinaryExpr:
		return r.render(e.X) + " " + e.Op.String() + " " + r.render(e.Y)
	case *ast.StarExpr:
		return "*" + r.render(e.X)
	case *ast.CallExpr:
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "concurrency" && len(e.Args) == 1 {
			return "{MaxConcurrentReconciles: " + r.render(e.Args[0]) + "}"
		}
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = r.render(a)
		}
		return r.render(e.Fun) + "(" + strings.Join(args, ", ") + ")"
	case *ast.CompositeLit:
		var parts []string
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				parts = append(parts, r.render(kv.Key)+": "+r.render(kv.Value))
			}
		}
		sort.Strings(parts)
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprintf("%T", e)
}
