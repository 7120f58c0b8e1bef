package scenariotest

// HoldWorkers powers every worker off and waits for what never happens,
// so a run of it holds its faults until its context ends or its process
// is killed: what tests of leases and journals need a run in flight for.
const HoldWorkers = `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: hold-workers}
spec:
  requires: [VMPower, ClusterAPI]
  timeout: 10m
  targets:
    - name: workers
      select: {role: worker}
  steps:
    - name: off
      inject: {fault: vm.power-off, target: workers}
    - name: hold
      observe:
        phases:
          - {name: never, when: {probe: vm-suspended, target: workers}}
`
