package e2e

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive
	. "github.com/onsi/gomega"    //nolint:revive

	"github.com/faultline-dev/faultline/framework/check"
	"github.com/faultline-dev/faultline/providers"
)

// ChecksSpecInput is what ChecksSpec needs, read when the spec runs.
type ChecksSpecInput struct {
	Environment *Environment
}

// ChecksSpec runs faultline check's rules, read-only, on every Cluster of
// the environment's shared provider: the pre-upgrade gate fails on any
// finding at error severity, and names it with its fix.
func ChecksSpec(inputGetter func() ChecksSpecInput) {
	// Serial: under ginkgo -p, only the first process has the lab.
	It("reports nothing at error severity", Serial, func(ctx SpecContext) {
		input := inputGetter()
		Expect(input.Environment).NotTo(BeNil())
		p := input.Environment.checked()
		if p == nil {
			Skip("no cluster to check: the suite's lab is not running")
		}
		o, ok := p.(providers.Objects)
		if !ok {
			Skip("the provider " + p.Name() + " reads no cluster")
		}
		machines, err := p.Resolve(ctx, providers.Selector{})
		Expect(err).NotTo(HaveOccurred())
		seen := map[string]bool{}
		for _, m := range machines {
			cluster := m.Attributes[providers.AttrNamespace] + "/" + m.Attributes[providers.AttrCluster]
			if seen[cluster] {
				continue
			}
			seen[cluster] = true
			findings, err := check.RunChecks(context.WithoutCancel(ctx), o, m)
			Expect(err).NotTo(HaveOccurred(), "checks of %s", cluster)
			var errs []string
			for _, f := range findings {
				GinkgoWriter.Printf("%s %s %s: %s\n", cluster, f.Severity, f.ID, f.Message)
				if f.Severity == "error" {
					errs = append(errs, f.ID+": "+f.Message+"\n  fix: "+f.Fix)
				}
			}
			Expect(errs).To(BeEmpty(), "cluster %s:\n%s", cluster, strings.Join(errs, "\n"))
		}
		Expect(seen).NotTo(BeEmpty(), "no Cluster to check")
	})
}
