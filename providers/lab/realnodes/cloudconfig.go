package realnodes

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// CloudConfig is what a node does at its first boot, as cloud-init reads
// it from the bootstrap data CAPV put on the VM (CABPK's cloud-config):
// files to write, then commands to run.
type CloudConfig struct {
	WriteFiles []WriteFile `json:"write_files"`
	BootCmd    []Command   `json:"bootcmd"`
	RunCmd     []Command   `json:"runcmd"`
}

// WriteFile is one entry of write_files.
type WriteFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Encoding is "", "b64" or "base64" (gzip is not supported).
	Encoding    string `json:"encoding"`
	Permissions string `json:"permissions"`
	Owner       string `json:"owner"`
	Append      bool   `json:"append"`
}

// Command is one entry of runcmd or bootcmd: a string runs under
// /bin/sh -c as cloud-init runs it, a list is the argument list.
type Command []string

// UnmarshalJSON takes a string or a list of strings.
func (c *Command) UnmarshalJSON(b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err == nil {
		*c = Command{"/bin/sh", "-c", s}
		return nil
	}
	var list []string
	if err := yaml.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("a command is a string or a list of strings, got %s", b)
	}
	*c = list
	return nil
}

// Bytes is the file's content, decoded.
func (f WriteFile) Bytes() ([]byte, error) {
	switch f.Encoding {
	case "", "text/plain":
		return []byte(f.Content), nil
	case "b64", "base64":
		b, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, fmt.Errorf("write_files %s: %w", f.Path, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("write_files %s: encoding %q: expected none, b64 or base64", f.Path, f.Encoding)
}

// GuestInfo is what CAPV puts in a VM's extraConfig for cloud-init's
// VMware datasource: guestinfo.userdata and guestinfo.metadata, each with
// its .encoding.
type GuestInfo map[string]string

// Decode returns a guestinfo key's value, decoded as its .encoding says.
func (g GuestInfo) Decode(key string) ([]byte, error) {
	v, ok := g[key]
	if !ok {
		return nil, fmt.Errorf("the VM has no %s", key)
	}
	switch enc := g[key+".encoding"]; enc {
	case "":
		return []byte(v), nil
	case "base64", "b64":
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("%s.encoding %q: expected base64 (gzip+base64 is not supported)", key, enc)
	}
}

// ParseCloudConfig reads guestinfo's userdata as cloud-init would: a
// "## template: jinja" header renders the cloud-config's {{ ... }} with
// the instance's metadata first.
func ParseCloudConfig(g GuestInfo) (*CloudConfig, map[string]any, error) {
	user, err := g.Decode("guestinfo.userdata")
	if err != nil {
		return nil, nil, err
	}
	meta := map[string]any{}
	if raw, err := g.Decode("guestinfo.metadata"); err == nil {
		if err := yaml.Unmarshal(raw, &meta); err != nil {
			return nil, nil, fmt.Errorf("guestinfo.metadata: %w", err)
		}
	}
	if first, rest, ok := bytes.Cut(user, []byte("\n")); ok && strings.TrimSpace(string(first)) == "## template: jinja" {
		if user, err = renderJinja(rest, meta); err != nil {
			return nil, nil, err
		}
	}
	if !bytes.HasPrefix(bytes.TrimLeft(user, " \t\n"), []byte("#cloud-config")) {
		return nil, nil, fmt.Errorf("guestinfo.userdata is not a #cloud-config")
	}
	var cc CloudConfig
	if err := yaml.Unmarshal(user, &cc); err != nil {
		return nil, nil, fmt.Errorf("guestinfo.userdata: %w", err)
	}
	return &cc, meta, nil
}

var jinjaExpr = regexp.MustCompile(`\{\{\s*([^}]*?)\s*\}\}`)

// renderJinja fills the {{ ... }} cloud-init's jinja templates use in
// CABPK's and CAPV's cloud-configs: the instance data v1.* and
// ds.meta_data.*, local_hostname and instance_id. Anything else is an
// error naming it, where cloud-init would leave a CI_MISSING_JINJA_VAR.
func renderJinja(text []byte, meta map[string]any) ([]byte, error) {
	if bytes.Contains(text, []byte("{%")) {
		return nil, fmt.Errorf("guestinfo.userdata: jinja statements ({%% ... %%}) are not supported")
	}
	str := func(k string) (string, bool) {
		v, ok := meta[k]
		if !ok {
			return "", false
		}
		return fmt.Sprint(v), true
	}
	var missing []string
	out := jinjaExpr.ReplaceAllFunc(text, func(m []byte) []byte {
		expr := string(jinjaExpr.FindSubmatch(m)[1])
		var v string
		var ok bool
		switch expr {
		case "local_hostname", "v1.local_hostname", "ds.meta_data.hostname", "ds.meta_data.local_hostname":
			if v, ok = str("local-hostname"); !ok {
				v, ok = str("hostname")
			}
		case "instance_id", "v1.instance_id":
			v, ok = str("instance-id")
		default:
			if k, found := strings.CutPrefix(expr, "ds.meta_data."); found {
				v, ok = str(k)
			}
		}
		if !ok {
			missing = append(missing, expr)
			return m
		}
		return []byte(v)
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("guestinfo.userdata: no value for %s in guestinfo.metadata", strings.Join(missing, ", "))
	}
	return out, nil
}
