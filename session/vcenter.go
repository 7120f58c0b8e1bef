package session

import (
	"context"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/providers/vsphere"
)

// openVCenter logs in to the vCenter v names; unless allowed already (a
// read-only or opted-in session), it must be in the allow-list. The
// vSphere provider's Close goes with the session's.
func (s *Session) openVCenter(ctx context.Context, v VCenterConfig, log logr.Logger, allowed, readOnly bool) (*vsphere.Provider, error) {
	u, err := v.Endpoint()
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	if !allowed && !AllowedVCenter(v.Allowed, u) {
		return nil, configErr("refusing a destructive run against vCenter %s: host %s is not in --allow-vcenter or $%s", u, u.Host, EnvAllowedVCenters)
	}
	if u.Scheme == "http" && !readOnly && !vsphere.Loopback(u) {
		// Its journal would tell recover to log in the same way.
		return nil, configErr("refusing a destructive run against vCenter %s over http: its login sends the password in cleartext; http is only for a simulator on loopback", u)
	}
	// A missing username is the user's input, found before dialling.
	if err := v.Validate(); err != nil {
		return nil, &ConfigError{Err: err}
	}
	opts := append([]vsphere.Option{vsphere.WithLogger(log)}, v.Options...)
	if readOnly {
		opts = append(opts, vsphere.WithReadOnly())
	}
	p, err := vsphere.New(ctx, v.Config, opts...)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, p.Close)
	return p, nil
}

// openVSphere opens the vSphere provider alone.
func (s *Session) openVSphere(ctx context.Context, cfg Config) error {
	p, err := s.openVCenter(ctx, cfg.VCenter, cfg.Log, cfg.optedIn(), cfg.Management.ReadOnly)
	if err != nil {
		return err
	}
	s.Provider = p
	return nil
}

// Allowed tells whether name is in list or in the comma-separated
// environment variable env.
func Allowed(list []string, env, name string) bool {
	for _, a := range withEnv(list, env) {
		if a == name {
			return true
		}
	}
	return false
}

// AllowedVCenter tells whether the vCenter at u is in list or in
// $FAULTLINE_ALLOWED_VCENTERS, by host:port or host name.
func AllowedVCenter(list []string, u *url.URL) bool {
	for _, a := range withEnv(list, EnvAllowedVCenters) {
		if a == u.Host || a == u.Hostname() || (net.ParseIP(a) == nil && strings.EqualFold(a, u.Hostname())) {
			return true
		}
	}
	return false
}

func withEnv(list []string, env string) []string {
	out := make([]string, 0, len(list))
	for _, a := range list {
		out = append(out, strings.TrimSpace(a))
	}
	if v := os.Getenv(env); v != "" {
		for _, a := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(a))
		}
	}
	return out
}
