package workloadapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/faultline-dev/faultline/providers/lab/workloadapi/workloadapitest"
)

// TestKubectlGetNodes: the real kubectl shows a simulated workload
// cluster's Nodes with kube-apiserver's columns (STATUS, ROLES, AGE,
// VERSION; with -o wide INTERNAL-IP), not NAME and AGE only.
func TestKubectlGetNodes(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, cfg, c := workloadapitest.Start(t, ctx, nil)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "lab-cp-0", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.4"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.35.4"},
		},
	}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["lab"] = &clientcmdapi.AuthInfo{Token: "lab"} // the simulated API server takes any
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "lab"}
	kc.CurrentContext = "lab"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "nodes"}, `(?m)^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\nlab-cp-0\s+Ready\s+control-plane\s+\S+\s+v1\.35\.4$`},
		{[]string{"get", "nodes", "-o", "wide"}, `(?m)^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+INTERNAL-IP\s+EXTERNAL-IP.*\nlab-cp-0\s+Ready\s+control-plane\s+\S+\s+v1\.35\.4\s+192\.0\.2\.4\s+<none>`},
		{[]string{"get", "node", "lab-cp-0"}, `(?m)^lab-cp-0\s+Ready\s+control-plane`},
	} {
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", path}, tc.args...)...)
		cmd.Env = append(os.Environ(), "KUBECACHEDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || !regexp.MustCompile(tc.want).Match(out) {
			t.Errorf("kubectl %s: %v\n%s\nwant %s", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}
