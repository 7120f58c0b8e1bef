package management

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig of the management cluster's admin,
// context faultline-lab, to path.
func (m *Plane) WriteKubeconfig(path string) error {
	user, err := m.env.AddUser(envtestAdmin(), nil)
	if err != nil {
		return fmt.Errorf("management cluster admin user: %w", err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("management cluster kubeconfig: %w", err)
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return fmt.Errorf("management cluster kubeconfig: %w", err)
	}
	renameContext(cfg, "faultline-lab")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func renameContext(cfg *clientcmdapi.Config, name string) {
	for old, ctx := range cfg.Contexts {
		delete(cfg.Contexts, old)
		cfg.Contexts[name] = ctx
	}
	cfg.CurrentContext = name
}
