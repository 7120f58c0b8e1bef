package realnodes

import (
	"encoding/base64"
	"strings"
	"testing"
)

// cabpkInit is a control plane's bootstrap data as CABPK writes it
// (controlplane_init.go's template), with the jinja values CAPV's
// templates use.
const cabpkInit = `## template: jinja
#cloud-config
write_files:
-   path: /etc/kubernetes/pki/ca.crt
    encoding: "base64"
    owner: root:root
    permissions: '0640'
    content: |
      Q0EgQ0VSVAo=
-   path: /etc/hosts
    append: true
    content: |
      127.0.0.1 {{ ds.meta_data.hostname }}
-   path: /run/kubeadm/kubeadm.yaml
    owner: root:root
    permissions: '0640'
    content: |
      ---
      apiVersion: kubeadm.k8s.io/v1beta4
      kind: InitConfiguration
      nodeRegistration:
        name: '{{ local_hostname }}'
runcmd:
  - "hostnamectl set-hostname {{ ds.meta_data.hostname }}"
  - 'kubeadm init --config /run/kubeadm/kubeadm.yaml  && echo success > /run/cluster-api/bootstrap-success.complete'
  - [sh, -c, "echo done"]
`

const capvMeta = `instance-id: "lab-cp-abcde"
local-hostname: "lab-cp-abcde"
wait-on-network:
  ipv4: true
`

func guestInfo(user, meta string) GuestInfo {
	return GuestInfo{
		"guestinfo.userdata": base64.StdEncoding.EncodeToString([]byte(user)), "guestinfo.userdata.encoding": "base64",
		"guestinfo.metadata": base64.StdEncoding.EncodeToString([]byte(meta)), "guestinfo.metadata.encoding": "base64",
	}
}

func TestParseCloudConfig(t *testing.T) {
	t.Parallel()
	cc, meta, err := ParseCloudConfig(guestInfo(cabpkInit, capvMeta))
	if err != nil {
		t.Fatal(err)
	}
	if meta["local-hostname"] != "lab-cp-abcde" {
		t.Fatalf("metadata %v", meta)
	}
	if len(cc.WriteFiles) != 3 {
		t.Fatalf("write_files: %+v", cc.WriteFiles)
	}
	ca, err := cc.WriteFiles[0].Bytes()
	if err != nil || string(ca) != "CA CERT\n" || cc.WriteFiles[0].Permissions != "0640" || cc.WriteFiles[0].Owner != "root:root" {
		t.Fatalf("a base64 file: %q, %v, %+v", ca, err, cc.WriteFiles[0])
	}
	if f := cc.WriteFiles[1]; !f.Append || f.Content != "127.0.0.1 lab-cp-abcde\n" {
		t.Fatalf("an appended file: %+v", f)
	}
	if !strings.Contains(cc.WriteFiles[2].Content, "name: 'lab-cp-abcde'") {
		t.Fatalf("the kubeadm config: %s", cc.WriteFiles[2].Content)
	}
	want := []string{
		"/bin/sh -c hostnamectl set-hostname lab-cp-abcde",
		"/bin/sh -c kubeadm init --config /run/kubeadm/kubeadm.yaml  && echo success > /run/cluster-api/bootstrap-success.complete",
		"sh -c echo done",
	}
	if len(cc.RunCmd) != len(want) {
		t.Fatalf("runcmd: %q", cc.RunCmd)
	}
	for i, c := range cc.RunCmd {
		if strings.Join(c, " ") != want[i] {
			t.Errorf("runcmd[%d] = %q, want %q", i, strings.Join(c, " "), want[i])
		}
	}
}

func TestParseCloudConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		g    GuestInfo
		want string
	}{
		{"no userdata", GuestInfo{}, "the VM has no guestinfo.userdata"},
		{"bad encoding", GuestInfo{"guestinfo.userdata": "x", "guestinfo.userdata.encoding": "gzip+base64"}, `encoding "gzip+base64"`},
		{"not base64", GuestInfo{"guestinfo.userdata": "%%%", "guestinfo.userdata.encoding": "base64"}, "guestinfo.userdata: illegal base64"},
		{"a shell script", guestInfo("#!/bin/sh\necho hi\n", capvMeta), "is not a #cloud-config"},
		{"a missing value", guestInfo("## template: jinja\n#cloud-config\nruncmd: ['{{ ds.meta_data.zone }}']\n", capvMeta), "no value for ds.meta_data.zone"},
		{"a jinja statement", guestInfo("## template: jinja\n#cloud-config\n{% if x %}\n", capvMeta), "jinja statements"},
		{"a bad command", guestInfo("#cloud-config\nruncmd: [{a: b}]\n", capvMeta), "a command is a string or a list"},
	} {
		_, _, err := ParseCloudConfig(tc.g)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
	}
	if _, err := (WriteFile{Path: "/x", Encoding: "gz"}).Bytes(); err == nil || !strings.Contains(err.Error(), `encoding "gz"`) {
		t.Errorf("a gzip file: %v", err)
	}
}
