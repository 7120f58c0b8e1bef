package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/framework/check"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// checkProbes are the probes over the checks.
var checkProbes = map[string]probeDef{
	"check": {capability: providers.CapObjects, args: []string{"finding", "message"}, check: checkFindingArgs,
		summary: "the checks of the target's workload cluster report the finding (an id such as calico-pool-too-small) with a message containing the text", eval: findingReported},
}

func findingIDList() string {
	ids := make([]string, 0, len(check.FindingIDs))
	for id := range check.FindingIDs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return strings.Join(ids, ", ")
}

func checkFindingArgs(args map[string]string) []scenario.ArgError {
	switch id := args["finding"]; {
	case id == "":
		return []scenario.ArgError{{Arg: "finding", Msg: "required: one of " + findingIDList()}}
	case check.FindingIDs[id] == "":
		return []scenario.ArgError{{Arg: "finding", Msg: fmt.Sprintf("got %q, expected one of %s", id, findingIDList())}}
	}
	return nil
}

// findingReported holds when the checks report the finding.
func findingReported(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
	o, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return false, "", err
	}
	findings, err := check.RunChecks(ctx, o, obj)
	if err != nil {
		return false, "", err
	}
	ids := make([]string, 0, len(findings))
	for _, f := range findings {
		if f.ID == args["finding"] && strings.Contains(f.Message, args["message"]) {
			return true, f.Message, nil
		}
		ids = append(ids, f.ID)
	}
	if len(ids) == 0 {
		return false, "no finding", nil
	}
	return false, "findings: " + strings.Join(ids, ", "), nil
}
