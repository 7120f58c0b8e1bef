package main

import (
	"os"
	"strings"

	"github.com/faultline-dev/faultline/session"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/providers/vsphere"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// vcenterFlags are the vSphere connection flags; each falls back to govc's
// environment variable.
type vcenterFlags struct {
	url, username, caFile, knownHosts, thumbprint, datacenter, passwordFile string
	insecure, plainHTTP                                                     bool
	allowed                                                                 []string
	// guestUsername and guestPasswordFile: the guest login of node
	// faults (registerGuest).
	guestUsername, guestPasswordFile string
}

func (f *vcenterFlags) register(fs *pflag.FlagSet, withAllow bool) {
	fs.StringVar(&f.url, "vcenter-url", "", "vCenter URL, e.g. https://vcenter.example.com/sdk (default $GOVC_URL)")
	fs.StringVar(&f.username, "vcenter-username", "", "vCenter username (default $GOVC_USERNAME, or the URL's user)")
	fs.StringVar(&f.caFile, "vcenter-ca-file", "", "PEM CA bundle that signs vCenter's certificate (default $GOVC_TLS_CA_CERTS)")
	fs.StringVar(&f.knownHosts, "vcenter-known-hosts", "", "file of 'host thumbprint' lines (default $GOVC_TLS_KNOWN_HOSTS)")
	fs.StringVar(&f.thumbprint, "vcenter-thumbprint", "", "SHA-1 or SHA-256 thumbprint of vCenter's certificate")
	fs.StringVar(&f.datacenter, "vcenter-datacenter", "", "datacenter that scopes VM names (default $GOVC_DATACENTER)")
	fs.StringVar(&f.passwordFile, "vcenter-password-file", "", "file holding the vCenter password (default $GOVC_PASSWORD)")
	fs.BoolVar(&f.insecure, "vcenter-insecure", false, "skip TLS verification of vCenter (default $GOVC_INSECURE); not for production")
	fs.BoolVar(&f.plainHTTP, "vcenter-plain-http", false, "allow an http:// vCenter URL, whose login sends the password in CLEARTEXT: only for a simulator on loopback (never for a destructive run against another host)")
	if withAllow {
		fs.StringSliceVar(&f.allowed, "allow-vcenter", nil, "vCenter host (or host:port) a destructive run may touch; repeatable (also $"+session.EnvAllowedVCenters+")")
	}
}

// registerGuest registers the guest login flags of the commands that
// inject or undo node faults.
func (f *vcenterFlags) registerGuest(fs *pflag.FlagSet) {
	fs.StringVar(&f.guestUsername, "guest-username", "", "guest OS login of node faults on VMs (stop the kubelet, move a static pod's manifest) through VMware Tools; root or passwordless sudo (default $"+vsphere.EnvGuestUsername+")")
	fs.StringVar(&f.guestPasswordFile, "guest-password-file", "", "file holding the guest login's password (default $"+vsphere.EnvGuestPasswordFile+" or $"+vsphere.EnvGuestPassword+")")
}

// options are the vSphere provider's options: the logger and, when one is
// given, the guest login of node faults.
func (f *vcenterFlags) options(log logr.Logger) ([]vsphere.Option, error) {
	opts := []vsphere.Option{vsphere.WithLogger(log)}
	// The flags stand over the environment; a password file given by
	// flag replaces a password from the environment.
	a, err := vsphere.GuestAuthFromEnv(func(key string) string {
		switch {
		case key == vsphere.EnvGuestUsername && f.guestUsername != "":
			return f.guestUsername
		case key == vsphere.EnvGuestPasswordFile && f.guestPasswordFile != "":
			return f.guestPasswordFile
		case key == vsphere.EnvGuestPassword && f.guestPasswordFile != "":
			return ""
		}
		return os.Getenv(key)
	})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if a == nil {
		return opts, nil
	}
	return append(opts, vsphere.WithGuestAuth(a)), nil
}

// config merges flags over the govc environment and checks the URL.
func (f *vcenterFlags) config() (vsphere.Config, error) {
	c, err := f.merged()
	if err != nil {
		return c, err
	}
	if _, err := c.Endpoint(); err != nil {
		return c, usageErr("%v", err)
	}
	return c, nil
}

// merged merges flags over the govc environment; the URL may still be empty
// (recover takes it from the journal).
func (f *vcenterFlags) merged() (vsphere.Config, error) {
	c, err := vsphere.ConfigFromEnv(os.Getenv)
	if err != nil {
		return c, usageErr("%v", err)
	}
	for _, o := range []struct {
		dst *string
		v   string
	}{
		{&c.URL, f.url}, {&c.Username, f.username}, {&c.CAFile, f.caFile}, {&c.KnownHostsFile, f.knownHosts},
		{&c.Thumbprint, f.thumbprint}, {&c.Datacenter, f.datacenter},
	} {
		if o.v != "" {
			*o.dst = o.v
		}
	}
	if f.insecure {
		c.Insecure = true
	}
	c.PlainHTTP = f.plainHTTP
	if c.Thumbprint != "" {
		if err := vsphere.CheckThumbprint(c.Thumbprint); err != nil {
			return c, usageErr("--vcenter-thumbprint: %v", err)
		}
	}
	// A named certificate file that is not there is the user's mistake,
	// found before anything is dialled.
	for _, file := range []struct {
		path      string
		byFlag    bool
		flag, env string
	}{
		{c.CAFile, f.caFile != "", "--vcenter-ca-file", "$GOVC_TLS_CA_CERTS"},
		{c.KnownHostsFile, f.knownHosts != "", "--vcenter-known-hosts", "$GOVC_TLS_KNOWN_HOSTS"},
	} {
		if file.path == "" {
			continue
		}
		if err := regularfile.Check(file.path, regularfile.Small); err != nil {
			from := file.env
			if file.byFlag {
				from = file.flag
			}
			return c, usageErr("%s: %v", from, err)
		}
	}
	if f.passwordFile != "" {
		b, err := regularfile.Read(f.passwordFile, regularfile.Small)
		if err != nil {
			return c, usageErr("--vcenter-password-file: %v", err)
		}
		c.Password = strings.TrimRight(string(b), "\r\n")
	}
	return c, nil
}

// sessionConfig is the session's vCenter: the flags merged over the govc
// environment, the allow-list and the provider's options. The URL may be
// empty (a management cluster without a vCenter, or recover's journal).
func (f *vcenterFlags) sessionConfig(log logr.Logger) (session.VCenterConfig, error) {
	c, err := f.merged()
	if err != nil {
		return session.VCenterConfig{}, err
	}
	opts, err := f.options(log)
	if err != nil {
		return session.VCenterConfig{}, err
	}
	// options leads with the logger; the session sets its own.
	return session.VCenterConfig{Config: c, Allowed: f.allowed, Options: opts[1:]}, nil
}
