package vsphere

import (
	"fmt"
	"net/url"

	"github.com/faultline-dev/faultline/providers"
)

// Name is the vSphere provider's name, in journals and on the command line.
const Name = "vsphere"

// Record is what a journal keeps about a vCenter a fault went to: how to
// reach it again, never credentials. It is written into a
// providers.ProviderRef by Ref and read back by RecordOf.
type Record struct {
	URL, Datacenter        string
	Insecure               bool
	CAFile, KnownHostsFile string
	Thumbprint             string
	// ServerThumbprint is the thumbprint of the certificate vCenter
	// presented when the fault was injected: the identity recover pins
	// TLS to.
	ServerThumbprint string
}

// The ProviderRef.Config keys of a Record.
const (
	refURL              = "url"
	refDatacenter       = "datacenter"
	refInsecure         = "insecure"
	refCAFile           = "caFile"
	refKnownHostsFile   = "knownHostsFile"
	refThumbprint       = "thumbprint"
	refServerThumbprint = "serverThumbprint"
)

// Ref is the record as a journal keeps it.
func (r Record) Ref() providers.ProviderRef {
	ref := providers.ProviderRef{Name: Name, Target: r.URL, Config: map[string]string{}}
	r.Into(ref.Config)
	return ref
}

// Into writes the record's keys into cfg, for a provider whose record
// holds a vCenter's (capi's).
func (r Record) Into(cfg map[string]string) {
	set := func(k, v string) {
		if v != "" {
			cfg[k] = v
		}
	}
	set(refURL, r.URL)
	set(refDatacenter, r.Datacenter)
	if r.Insecure {
		cfg[refInsecure] = "true"
	}
	set(refCAFile, r.CAFile)
	set(refKnownHostsFile, r.KnownHostsFile)
	set(refThumbprint, r.Thumbprint)
	set(refServerThumbprint, r.ServerThumbprint)
}

// RecordOf reads a vCenter's record back from a journal's ProviderRef
// config (a vsphere ref's, or a capi ref's vCenter). ok is false when it
// names no vCenter.
func RecordOf(cfg map[string]string) (r Record, ok bool) {
	r = Record{
		URL: cfg[refURL], Datacenter: cfg[refDatacenter], Insecure: cfg[refInsecure] == "true",
		CAFile: cfg[refCAFile], KnownHostsFile: cfg[refKnownHostsFile],
		Thumbprint: cfg[refThumbprint], ServerThumbprint: cfg[refServerThumbprint],
	}
	return r, r.URL != ""
}

// Host is the host name of the record's vCenter, as allow-lists name it.
func (r Record) Host() (string, error) {
	u, err := url.Parse(r.URL)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("journal records vCenter %q: not a URL with a host", r.URL)
	}
	return u.Hostname(), nil
}

// RecoverConfig is the Config with which recover reaches the record's
// vCenter: its URL, and TLS verified against the certificate recorded at
// injection (or base's CA file and thumbprint when the journal recorded
// none), never insecure whatever the journal says. Credentials and
// anything the record lacks come from base.
func (r Record) RecoverConfig(base Config) Config {
	c := base
	c.URL = r.URL
	if r.Datacenter != "" {
		c.Datacenter = r.Datacenter
	}
	if r.CAFile != "" && c.CAFile == "" {
		c.CAFile = r.CAFile
	}
	if r.KnownHostsFile != "" && c.KnownHostsFile == "" {
		c.KnownHostsFile = r.KnownHostsFile
	}
	if r.Thumbprint != "" && c.Thumbprint == "" {
		c.Thumbprint = r.Thumbprint
	}
	c.Insecure = false
	if r.ServerThumbprint != "" {
		c.Thumbprint = r.ServerThumbprint
	}
	return c
}
